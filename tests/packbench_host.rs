//! `haloport pack-bench` on the host backend: every figure measured, the 6-face kernels checked
//! element by element (f64 and f32, halo 1 and 2), and a job of more than one rank refused.

mod common;

use common::{alone, mpirun, read_json};

/// Elements of the six faces of a `local` domain with halo width `halo`.
fn face_elems(local: [u64; 3], halo: u64) -> u64 {
    let [x, y, z] = local;
    2 * halo * (y * z + x * z + x * y)
}

#[test]
fn every_figure_is_measured_and_the_faces_are_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The f32 run reads the region tables from device memory, the f64 one from the launches'
    // parameters (as the library does).
    for (dims, halo, elem, eb, table_in_memory) in [
        ([12_u64, 10, 8], 2_u64, "f64", 8_u64, false),
        ([9, 7, 6], 1, "f32", 4, true),
    ] {
        let local = format!("{}x{}x{}", dims[0], dims[1], dims[2]);
        let local = local.as_str();
        let json = dir.path().join(format!("{local}-{elem}.json"));
        let halo_arg = halo.to_string();
        let mut args = vec![
            "pack-bench",
            "--backend",
            "host",
            "--local",
            local,
            "--halo",
            &halo_arg,
            "--type",
            elem,
            "--reps",
            "2",
            "--runs",
            "3",
            "--json",
            json.to_str().expect("utf-8 path"),
        ];
        if table_in_memory {
            args.push("--table-in-memory");
        }
        let job = alone(&args);
        assert_eq!(job.code, Some(0), "{local} {elem}: {}", job.explain());
        let r = read_json(&json);
        let faces = face_elems(dims, halo);
        let alloc: u64 = dims.iter().map(|d| d + 2 * halo).product();
        assert_eq!(r["verified"], true, "{local} {elem}");
        assert_eq!(r["table_in_memory"], table_in_memory, "{local} {elem}");
        assert_eq!(r["check"]["packed"], faces, "{local} {elem}");
        assert_eq!(r["check"]["field"], alloc, "{local} {elem}");
        assert_eq!(r["check"]["wrong"], 0, "{local} {elem}");
        let rows = r["rows"].as_array().expect("rows");
        let named = |needle: &str| {
            rows.iter()
                .filter(|row| row["what"].as_str().unwrap_or("").contains(needle))
                .count()
        };
        // Field copies (2), 6 faces paired and unpaired (4), cold (3), copy engine (2), each
        // face by the kernel and by the copy engine (12).
        assert_eq!(rows.len(), 23, "{local} {elem}: {rows:?}");
        assert_eq!(named("cold"), 3, "{local} {elem}");
        for row in rows {
            let what = row["what"].as_str().expect("what");
            assert!(row["median_us"].as_f64().expect("time") > 0.0, "{what}");
            if what.starts_with("6 faces") {
                assert_eq!(row["bytes"], 2 * faces * eb, "{what}");
            }
        }
        for key in ["plan_exchange_us", "hand_exchange_us", "device_gbs"] {
            assert!(r[key].as_f64().expect(key) > 0.0, "{key}");
        }
    }
}

#[test]
fn more_than_one_rank_is_refused() {
    let job = mpirun(2, &["pack-bench", "--backend", "host", "--local", "8x8x8"]);
    job.assert_fails_with(2, "pack-bench measures one device");
}
