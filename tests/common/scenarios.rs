//! Programs that start themselves under mpirun (`harness = false`): the parent's side. Each
//! rank of the job runs the program's scenarios and prints "rank passed" when all passed.

use std::process::{Command, ExitCode};

/// The parent of a self-launching MPI scenario program `name`: when a test runner lists tests
/// (`--list`, as cargo-nextest does before running any) none, so the scenarios run when the
/// program runs, not while runners list side by side; otherwise the program itself under
/// `mpirun -np N` for each of `nps` (with `child_var` set, and `env`), each job bounded, every
/// rank's verdict counted.
pub fn run_parent(name: &str, child_var: &str, nps: &[u32], env: &[(&str, &str)]) -> ExitCode {
    if std::env::args().any(|a| a == "--list") {
        return ExitCode::SUCCESS;
    }
    let me = std::env::current_exe().expect("the test's own path");
    let mut failed = false;
    for &np in nps {
        let np_arg = np.to_string();
        let mut command = Command::new("timeout");
        command
            .args([
                "120",
                "mpirun",
                "--oversubscribe",
                "-np",
                &np_arg,
                "-x",
                child_var,
            ])
            .arg(&me)
            .env(child_var, "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        for (var, value) in env {
            command.env(var, value);
        }
        let output = command
            .output()
            .expect("mpirun runs (see README: ci/setup.sh)");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        print!("{stdout}");
        eprint!("{stderr}");
        let passed = stdout.matches("rank passed").count();
        if !output.status.success() || passed != np as usize {
            eprintln!(
                "{name} -np {np}: {passed} of {np} ranks passed ({})",
                output.status
            );
            failed = true;
        }
    }
    if failed {
        return ExitCode::FAILURE;
    }
    let counts: Vec<String> = nps.iter().map(u32::to_string).collect();
    println!(
        "{name}: every scenario passed on {} ranks",
        counts.join(", ")
    );
    ExitCode::SUCCESS
}
