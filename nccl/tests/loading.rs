//! Finding and opening the library: what `haloport info` will print when the nccl route is
//! missing. No MPI job: the stand-in is only opened, not used. One test per variable read, as
//! the variables are the process's (each test binary of cargo runs its tests side by side).

mod common;

use haloport_nccl::{Error, Flavour, Nccl};

#[test]
fn a_missing_library_is_an_error_naming_where_it_looked() {
    // The variable names one path, and only it is tried.
    std::env::set_var("HALOPORT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
    let e = Nccl::load(Flavour::Nccl).expect_err("nothing at that path");
    std::env::remove_var("HALOPORT_NCCL_LIBRARY");
    let text = e.to_string();
    match &e {
        Error::LibraryNotFound { flavour, tried } => {
            assert_eq!(*flavour, Flavour::Nccl);
            assert_eq!(tried.len(), 1, "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        text.starts_with("NCCL not found: HALOPORT_NCCL_LIBRARY=/nonexistent/libnccl.so.2: "),
        "{text}"
    );
    assert!(text.contains("No such file"), "the loader's answer: {text}");

    // Without the variable, the sonames; CI has no RCCL, a machine that has one loads it.
    match Nccl::load(Flavour::Rccl) {
        Err(e @ Error::LibraryNotFound { .. }) => {
            let text = e.to_string();
            assert!(
                text.starts_with("RCCL not found: librccl.so.1: ")
                    && text.contains("; librccl.so: "),
                "{text}"
            );
        }
        Err(other) => panic!("{other}"),
        Ok(rccl) => assert!(rccl.version().major >= 2, "{rccl:?}"),
    }
}

#[test]
fn a_missing_symbol_is_an_error_naming_it() {
    let lib = common::build_standin(&["HALOPORT_STANDIN_OMIT_ABORT"]);
    let path = lib.to_str().expect("a UTF-8 path");
    let e = Nccl::load_from(Flavour::Rccl, path).expect_err("ncclCommAbort is missing");
    match &e {
        Error::MissingSymbol {
            flavour,
            library,
            symbol,
            ..
        } => {
            assert_eq!(*flavour, Flavour::Rccl);
            assert_eq!(library, path);
            assert_eq!(*symbol, "ncclCommAbort");
        }
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("RCCL at {path} lacks the symbol ncclCommAbort: ")),
        "{text}"
    );
}

#[test]
fn the_standin_loads_with_its_version() {
    let lib = common::build_standin(&[]);
    let path = lib.to_str().expect("a UTF-8 path");
    let nccl = Nccl::load_from(Flavour::Nccl, path).expect("the stand-in has every symbol");
    assert_eq!(nccl.version().to_string(), "2.99.1");
    assert_eq!(nccl.path(), path);
    assert_eq!(nccl.flavour(), Flavour::Nccl);
}
