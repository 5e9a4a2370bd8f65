//! Finding and opening the library: what `haloport info` will print when the nccl route is
//! missing. No MPI job: the stand-in is only opened, not used. The test that sets the library
//! variables runs in a process of its own.

mod common;

use haloport_nccl::{Error, Flavour, Nccl};

#[test]
fn a_missing_library_is_an_error_naming_where_it_looked() {
    // The variables are read in a process of their own (this binary again, one test), so that
    // no test here changes the environment others read.
    let me = std::env::current_exe().expect("the test's own path");
    let output = std::process::Command::new(me)
        .args(["--exact", "missing_library", "--ignored", "--nocapture"])
        .env(common::CHILD, "1")
        .env("HALOPORT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2")
        .env_remove("HALOPORT_RCCL_LIBRARY")
        .output()
        .expect("the test runs itself");
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
#[ignore = "run by a_missing_library_is_an_error_naming_where_it_looked, with its variables"]
fn missing_library() {
    common::assert_child();
    // The variable names one path, and only it is tried.
    let e = Nccl::load(Flavour::Nccl).expect_err("nothing at that path");
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
    println!("{text}");

    // Without the variable, the sonames; CI has no RCCL, a machine that has one loads it.
    match Nccl::load(Flavour::Rccl) {
        Err(e @ Error::LibraryNotFound { .. }) => {
            let text = e.to_string();
            assert!(
                text.starts_with("RCCL not found: librccl.so.1: ")
                    && text.contains("; librccl.so: "),
                "{text}"
            );
            println!("{text}");
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
