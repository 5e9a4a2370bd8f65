//! Which route each neighbour's messages take, and why: one decision, made from what is known
//! of the link (where the neighbour is, peer access, NCCL, GPU-aware MPI) and the routes
//! preferred for its kind of link, by the exchange's set-up on every rank alike and by
//! `haloport plan` offline.
//!
//! The preferences come from the transport (`auto`: by capability) or from a routes file that
//! `haloport tune` wrote from measurements ([`RoutesFile`]): per kind of link (within a node,
//! between nodes) the routes in the order measured, the first that serves a link taking it.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::exchange::{HaloOptions, HaloStrategy};
use super::layout::Link;
use crate::error::{Error, Result};
use crate::transport::TransportKind;

/// Where a neighbour is, seen from this rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    /// The neighbour is this rank (a periodic dimension with one process).
    Itself,
    /// Another rank on this rank's node.
    SameNode,
    /// A rank on another node.
    OtherNode,
    /// Another rank, not asked where (the `mpi` and `nccl` transports do not look).
    NotAsked,
}

impl Locality {
    /// The name used in results: `itself`, `same-node`, `other-node`, `not-asked`.
    pub fn name(self) -> &'static str {
        match self {
            Locality::Itself => "itself",
            Locality::SameNode => "same-node",
            Locality::OtherNode => "other-node",
            Locality::NotAsked => "not-asked",
        }
    }
}

/// What is known of one link when its route is chosen; every field is the same at both ends
/// (agreed at set-up), so both ends choose alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkFacts {
    /// Where the neighbour is.
    pub locality: Locality,
    /// Same node, and each device can store into the other's memory.
    pub peer_access: bool,
    /// Every rank of the job loads NCCL (RCCL), so a communicator can be built.
    pub nccl: bool,
    /// Both ends' MPI takes device memory (GPU-aware MPI).
    pub device_mpi: bool,
}

/// The routes a kind of link may take, most wanted first (at most four, no repeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Link>", into = "Vec<Link>")]
pub struct Preference {
    routes: [Link; 4],
    len: u8,
}

impl Preference {
    /// The routes in `routes`' order, checked: at least one, no repeats, never `local` (the
    /// neighbour that is this rank has no choice).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming what is wrong.
    pub fn new(routes: &[Link]) -> Result<Preference> {
        if routes.is_empty() {
            return Err(Error::InvalidInput(
                "a route preference needs at least one route (mpi serves every link)".into(),
            ));
        }
        let mut out = [Link::Staged; 4];
        for (i, &link) in routes.iter().enumerate() {
            if link == Link::Local {
                return Err(Error::InvalidInput(
                    "'local' is not a route to prefer: it serves only a neighbour that is the rank itself".into(),
                ));
            }
            if routes[..i].contains(&link) {
                return Err(Error::InvalidInput(format!(
                    "route '{}' is listed twice in one preference",
                    link.name()
                )));
            }
            out[i] = link;
        }
        Ok(Preference {
            routes: out,
            len: routes.len() as u8,
        })
    }

    /// The routes, most wanted first.
    pub fn routes(&self) -> &[Link] {
        &self.routes[..usize::from(self.len)]
    }
}

impl TryFrom<Vec<Link>> for Preference {
    type Error = Error;

    fn try_from(routes: Vec<Link>) -> Result<Preference> {
        Preference::new(&routes)
    }
}

impl From<Preference> for Vec<Link> {
    fn from(p: Preference) -> Vec<Link> {
        p.routes().to_vec()
    }
}

impl fmt::Display for Preference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.routes().iter().map(|l| l.name()).collect();
        write!(f, "[{}]", names.join(", "))
    }
}

/// The routes preferred per kind of link, for the `auto` transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteOrder {
    /// Links to another rank of the same node.
    pub within_node: Preference,
    /// Links to a rank of another node (`ipc` never serves them).
    pub between_nodes: Preference,
}

impl RouteOrder {
    /// `auto`'s order by capability: device-direct within a node, then NCCL, GPU-aware MPI,
    /// host-staged MPI.
    pub fn by_capability() -> RouteOrder {
        let ordered = |routes: &[Link]| Preference {
            routes: {
                let mut out = [Link::Staged; 4];
                out[..routes.len()].copy_from_slice(routes);
                out
            },
            len: routes.len() as u8,
        };
        RouteOrder {
            within_node: ordered(&[Link::Direct, Link::Nccl, Link::DeviceMpi, Link::Staged]),
            between_nodes: ordered(&[Link::Nccl, Link::DeviceMpi, Link::Staged]),
        }
    }

    /// Whether NCCL appears in either preference (every rank then probes for it).
    pub fn names_nccl(&self) -> bool {
        self.within_node.routes().contains(&Link::Nccl)
            || self.between_nodes.routes().contains(&Link::Nccl)
    }
}

/// Whether a rank on `backend` asks for NCCL (RCCL) under `transport` and `order`: the `nccl`
/// transport; `auto` by capability on a GPU backend; or an order naming NCCL (which the host
/// backend's stand-in serves too).
pub fn asks_for_nccl(transport: TransportKind, order: Option<&RouteOrder>, backend: &str) -> bool {
    match (transport, order) {
        (TransportKind::Nccl, _) => true,
        (TransportKind::Auto, Some(order)) => order.names_nccl(),
        (TransportKind::Auto, None) => backend != "host",
        _ => false,
    }
}

/// One link's route and the reason for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteChoice {
    /// Where the neighbour is.
    pub locality: Locality,
    /// How the link's messages travel.
    pub link: Link,
    /// Why, in words.
    pub why: String,
    /// The routes preferred before it that could not serve the link, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<PassedOver>,
}

impl RouteChoice {
    /// The reason in one line: the `why`, then the routes passed over before it and why, where
    /// there were any ("same node; ... (passed over ipc: no peer access between the two
    /// devices)").
    pub fn explained(&self) -> String {
        if self.passed_over.is_empty() {
            return self.why.clone();
        }
        let passed: Vec<String> = self
            .passed_over
            .iter()
            .map(|p| format!("{}: {}", p.route.name(), p.why))
            .collect();
        format!("{} (passed over {})", self.why, passed.join("; "))
    }
}

/// A preferred route that could not serve a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassedOver {
    /// The route.
    pub route: Link,
    /// Why it could not serve the link.
    pub why: String,
}

/// Why a route cannot serve a link, or `None` when it can.
fn unavailable(link: Link, facts: LinkFacts) -> Option<&'static str> {
    match link {
        Link::Local => Some("only the rank itself"),
        Link::Direct => match facts.locality {
            Locality::SameNode if !facts.peer_access => {
                Some("no peer access between the two devices")
            }
            Locality::SameNode => None,
            _ => Some("another node"),
        },
        Link::Nccl => (!facts.nccl).then_some("NCCL/RCCL is not loaded on every rank"),
        Link::DeviceMpi => {
            (!facts.device_mpi).then_some("MPI does not take device memory at both ends")
        }
        Link::Staged => None,
    }
}

/// The route of a link with `facts` under `transport` and, for `auto`, `order` (by capability
/// when `None`), and why. The same facts give the same answer at both ends of the link.
pub fn choose(
    transport: TransportKind,
    order: Option<&RouteOrder>,
    facts: LinkFacts,
) -> RouteChoice {
    let mpi = |why: &str| {
        if facts.device_mpi {
            let why = format!("{why}; from device memory: both ends' MPI takes it");
            (Link::DeviceMpi, why)
        } else {
            (Link::Staged, format!("{why}; host-staged"))
        }
    };
    let mut passed_over = Vec::new();
    let (link, why) = match (facts.locality, transport) {
        (Locality::Itself, _) => (Link::Local, "the neighbour is this rank".to_owned()),
        (_, TransportKind::Nccl) => (Link::Nccl, "transport nccl for every neighbour".to_owned()),
        (_, TransportKind::Mpi) => mpi("transport mpi for every neighbour"),
        (Locality::SameNode, TransportKind::Ipc) => (
            Link::Direct,
            "transport ipc: same node, peer access both ways".to_owned(),
        ),
        (_, TransportKind::Ipc) => mpi("transport ipc: another node, so MPI"),
        (locality, TransportKind::Auto) => {
            let source = if order.is_some() {
                "routes given"
            } else {
                "auto by capability"
            };
            let order = order.copied().unwrap_or_else(RouteOrder::by_capability);
            let (preference, class) = if locality == Locality::SameNode {
                (order.within_node, "same node")
            } else {
                (order.between_nodes, "another node")
            };
            let chosen = preference.routes().iter().copied().find(|&link| {
                let why = unavailable(link, facts);
                if let Some(why) = why {
                    passed_over.push(PassedOver {
                        route: link,
                        why: why.to_owned(),
                    });
                }
                why.is_none()
            });
            let why = match chosen {
                Some(_) => format!("{class}; {source}: the first of {preference} that serves it"),
                None => {
                    format!("{class}; {source}: none of {preference} serves it, so host-staged MPI")
                }
            };
            (chosen.unwrap_or(Link::Staged), why)
        }
    };
    RouteChoice {
        locality: facts.locality,
        link,
        why,
        passed_over,
    }
}

/// The settings of the exchange a routes file carries beside its routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TunedSettings {
    /// `base` or `tq`.
    pub strategy: HaloStrategy,
    /// Threads per GPU block of the pack and unpack kernels.
    pub threads: u32,
    /// Elements each thread moves.
    pub elems_per_thread: u32,
    /// Most GPU blocks serving one region of a signalled message.
    pub signalled_blocks: u32,
}

/// The schema a routes file declares.
pub const ROUTES_SCHEMA: &str = "haloport-routes/1";

/// What `haloport tune` writes and the library takes (`--routes FILE`): the routes per kind of
/// link in the order measured, and the settings measured best. Other keys (the measurements
/// behind the choice) are kept for people and ignored here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutesFile {
    /// [`ROUTES_SCHEMA`].
    pub schema: String,
    /// The routes, per kind of link.
    #[serde(flatten)]
    pub order: RouteOrder,
    /// The exchange's settings, where measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<TunedSettings>,
}

impl RoutesFile {
    /// Reads and checks a routes file.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the file and what is wrong with it (missing, not JSON,
    /// another schema, a route listed twice or unknown, settings out of range).
    pub fn read(path: &Path) -> Result<RoutesFile> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::InvalidInput(format!("routes file {shown}: cannot be read: {e}"))
        })?;
        let file: RoutesFile = serde_json::from_str(&text)
            .map_err(|e| Error::InvalidInput(format!("routes file {shown}: {e}")))?;
        if file.schema != ROUTES_SCHEMA {
            return Err(Error::InvalidInput(format!(
                "routes file {shown}: schema '{}', this build reads '{ROUTES_SCHEMA}'",
                file.schema
            )));
        }
        if file.order.between_nodes.routes().contains(&Link::Direct) {
            return Err(Error::InvalidInput(format!(
                "routes file {shown}: 'ipc' cannot serve links between nodes"
            )));
        }
        if let Some(s) = file.settings {
            let bad = !(32..=1024).contains(&s.threads)
                || !(1..=64).contains(&s.elems_per_thread)
                || !(1..=4096).contains(&s.signalled_blocks);
            if bad {
                return Err(Error::InvalidInput(format!(
                    "routes file {shown}: settings out of range (threads 32..=1024, elements per thread 1..=64, signalled blocks 1..=4096): {s:?}"
                )));
            }
        }
        Ok(file)
    }

    /// `options` with this file's routes (the `auto` transport in this order) and settings.
    pub fn apply(&self, mut options: HaloOptions) -> HaloOptions {
        options.transport = TransportKind::Auto;
        options.routes = Some(self.order);
        if let Some(s) = self.settings {
            options.strategy = s.strategy;
            options.threads = s.threads;
            options.elems_per_thread = s.elems_per_thread;
            options.signalled_blocks = s.signalled_blocks;
        }
        options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(locality: Locality) -> LinkFacts {
        LinkFacts {
            locality,
            peer_access: locality == Locality::SameNode,
            nccl: false,
            device_mpi: false,
        }
    }

    fn order(within: &[Link], between: &[Link]) -> RouteOrder {
        RouteOrder {
            within_node: Preference::new(within).expect("as the test expects"),
            between_nodes: Preference::new(between).expect("as the test expects"),
        }
    }

    #[test]
    fn auto_by_capability_takes_ipc_within_a_node_then_nccl_gpu_mpi_mpi() {
        let auto = |f| choose(TransportKind::Auto, None, f).link;
        assert_eq!(auto(facts(Locality::Itself)), Link::Local);
        assert_eq!(auto(facts(Locality::SameNode)), Link::Direct);
        assert_eq!(auto(facts(Locality::OtherNode)), Link::Staged);
        let no_access = LinkFacts {
            peer_access: false,
            ..facts(Locality::SameNode)
        };
        assert_eq!(auto(no_access), Link::Staged);
        let nccl = LinkFacts {
            nccl: true,
            ..no_access
        };
        assert_eq!(auto(nccl), Link::Nccl);
        let gpu_mpi = LinkFacts {
            device_mpi: true,
            ..facts(Locality::OtherNode)
        };
        assert_eq!(auto(gpu_mpi), Link::DeviceMpi);
        let chosen = choose(TransportKind::Auto, None, no_access);
        let passed: Vec<Link> = chosen.passed_over.iter().map(|p| p.route).collect();
        assert_eq!(passed, [Link::Direct, Link::Nccl, Link::DeviceMpi]);
        assert!(
            chosen.passed_over[0].why.contains("no peer access"),
            "{chosen:?}"
        );
    }

    #[test]
    fn a_given_order_is_followed_and_unavailable_routes_are_passed_over_with_reasons() {
        let o = order(&[Link::Staged, Link::Direct], &[Link::Nccl, Link::Staged]);
        let same = choose(TransportKind::Auto, Some(&o), facts(Locality::SameNode));
        assert_eq!(same.link, Link::Staged);
        assert!(same.passed_over.is_empty());
        let other = choose(TransportKind::Auto, Some(&o), facts(Locality::OtherNode));
        assert_eq!(other.link, Link::Staged);
        assert_eq!(other.passed_over.len(), 1);
        assert!(other.passed_over[0].why.contains("NCCL"), "{other:?}");
        // Nothing in the order serves the link: host-staged MPI, said so.
        let only_nccl = order(&[Link::Nccl], &[Link::Nccl]);
        let none = choose(
            TransportKind::Auto,
            Some(&only_nccl),
            facts(Locality::OtherNode),
        );
        assert_eq!(none.link, Link::Staged);
        assert!(none.why.contains("none of [nccl]"), "{none:?}");
    }

    #[test]
    fn forced_transports_ignore_the_order() {
        let o = order(&[Link::Staged], &[Link::Staged]);
        let same = facts(Locality::SameNode);
        assert_eq!(
            choose(TransportKind::Ipc, Some(&o), same).link,
            Link::Direct
        );
        assert_eq!(choose(TransportKind::Nccl, Some(&o), same).link, Link::Nccl);
        let gpu = LinkFacts {
            device_mpi: true,
            ..facts(Locality::NotAsked)
        };
        assert_eq!(choose(TransportKind::Mpi, None, gpu).link, Link::DeviceMpi);
        assert_eq!(
            choose(TransportKind::Ipc, None, facts(Locality::OtherNode)).link,
            Link::Staged
        );
    }

    #[test]
    fn preferences_refuse_repeats_local_and_nothing() {
        assert!(Preference::new(&[]).is_err());
        assert!(Preference::new(&[Link::Local]).is_err());
        let twice = Preference::new(&[Link::Nccl, Link::Staged, Link::Nccl]).expect_err("refused");
        assert!(
            twice.to_string().contains("'nccl' is listed twice"),
            "{twice}"
        );
        let p = Preference::new(&[Link::Nccl, Link::Staged]).expect("as the test expects");
        assert_eq!(p.to_string(), "[nccl, mpi]");
    }

    fn read(text: &str) -> Result<RoutesFile> {
        let path = std::env::temp_dir().join(format!(
            "haloport-routes-test-{}-{:x}.json",
            std::process::id(),
            text.len() * 31 + text.bytes().map(usize::from).sum::<usize>()
        ));
        std::fs::write(&path, text).expect("as the test expects");
        let file = RoutesFile::read(&path);
        std::fs::remove_file(&path).expect("as the test expects");
        file
    }

    #[test]
    fn routes_files_are_read_and_bad_ones_named() {
        let good = r#"{"schema": "haloport-routes/1", "within_node": ["ipc", "mpi"],
            "between_nodes": ["nccl", "mpi"], "why": {"within_node": "kept for people"},
            "settings": {"strategy": "tq", "threads": 128, "elems_per_thread": 2,
                         "signalled_blocks": 8}}"#;
        let file = read(good).expect("as the test expects");
        assert_eq!(
            file.order.within_node.routes(),
            [Link::Direct, Link::Staged]
        );
        let options = file.apply(HaloOptions::default());
        assert_eq!(options.transport, TransportKind::Auto);
        assert_eq!(options.strategy, HaloStrategy::Taskqueue);
        assert_eq!((options.threads, options.elems_per_thread), (128, 2));
        assert_eq!(options.routes, Some(file.order));
        for (text, needle) in [
            (
                r#"{"schema": "other/9", "within_node": ["mpi"], "between_nodes": ["mpi"]}"#,
                "schema 'other/9'",
            ),
            (
                r#"{"schema": "haloport-routes/1", "within_node": ["mpi"], "between_nodes": ["ipc"]}"#,
                "'ipc' cannot serve links between nodes",
            ),
            (
                r#"{"schema": "haloport-routes/1", "within_node": ["pigeon"], "between_nodes": ["mpi"]}"#,
                "unknown variant `pigeon`",
            ),
            (
                r#"{"schema": "haloport-routes/1", "within_node": ["mpi", "mpi"], "between_nodes": ["mpi"]}"#,
                "listed twice",
            ),
            (
                r#"{"schema": "haloport-routes/1", "within_node": ["mpi"]}"#,
                "between_nodes",
            ),
            (
                r#"{"schema": "haloport-routes/1", "within_node": ["mpi"], "between_nodes": ["mpi"], "settings": {"strategy": "base", "threads": 7, "elems_per_thread": 4, "signalled_blocks": 16}}"#,
                "out of range",
            ),
            ("not json", "expected"),
        ] {
            let err = read(text).expect_err("refused").to_string();
            assert!(
                err.contains(needle) && err.contains("routes file"),
                "{text}: {err}"
            );
        }
        let missing = RoutesFile::read(Path::new("/nonexistent/routes.json")).expect_err("refused");
        assert!(missing.to_string().contains("cannot be read"), "{missing}");
    }

    #[test]
    fn a_route_explained_adds_the_routes_passed_over_only_where_there_were_some() {
        let mut choice = RouteChoice {
            locality: Locality::SameNode,
            link: Link::Staged,
            why: "same node; routes given: the first of [ipc, mpi] that serves it".into(),
            passed_over: Vec::new(),
        };
        assert_eq!(choice.explained(), choice.why);
        choice.passed_over = vec![
            PassedOver {
                route: Link::Direct,
                why: "no peer access between the two devices".into(),
            },
            PassedOver {
                route: Link::Nccl,
                why: "NCCL/RCCL is not loaded on every rank".into(),
            },
        ];
        assert_eq!(
            choice.explained(),
            "same node; routes given: the first of [ipc, mpi] that serves it (passed over ipc: no peer access between the two devices; nccl: NCCL/RCCL is not loaded on every rank)"
        );
    }

    #[test]
    fn localities_are_named_as_in_the_json() {
        for locality in [
            Locality::Itself,
            Locality::SameNode,
            Locality::OtherNode,
            Locality::NotAsked,
        ] {
            let json = serde_json::to_string(&locality).expect("as the test expects");
            assert_eq!(json, format!("\"{}\"", locality.name()));
        }
    }
}
