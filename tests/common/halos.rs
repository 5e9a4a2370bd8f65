//! A field of one rank over a periodic grid whose halos can be checked cell by cell: interior
//! cells hold their index + 1, halo cells start at -1, and after an exchange each halo cell
//! holds the interior cell it mirrors.

use haloport::core::domain::HaloPlan;

/// The field before the exchange, f64 per cell of the allocation.
pub fn initial(plan: &HaloPlan) -> Vec<f64> {
    let d = &plan.decomposition;
    let mut values = vec![-1.0; d.alloc_elems() as usize];
    for z in 0..d.local[2] {
        for y in 0..d.local[1] {
            for x in 0..d.local[0] {
                let i = d.index([x + d.halo[0], y + d.halo[1], z + d.halo[2]]);
                values[i as usize] = (i + 1) as f64;
            }
        }
    }
    values
}

/// How many cells of `got` (the field after an exchange on one rank, periodic) differ from the
/// interior cell they mirror (interior cells mirror themselves).
pub fn wrong_halos(plan: &HaloPlan, got: &[f64]) -> usize {
    let d = &plan.decomposition;
    let want = initial(plan);
    let mut wrong = 0;
    for z in 0..d.alloc[2] {
        for y in 0..d.alloc[1] {
            for x in 0..d.alloc[0] {
                let at = [x, y, z];
                let mirror = [0, 1, 2].map(|k| {
                    let n = d.local[k];
                    (at[k] + n - d.halo[k]) % n + d.halo[k]
                });
                if got[d.index(at) as usize] != want[d.index(mirror) as usize] {
                    wrong += 1;
                }
            }
        }
    }
    wrong
}

/// Little-endian f64 values of `bytes`.
pub fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}
