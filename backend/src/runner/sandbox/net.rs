//! Outbound network without the host: runs that need the network (setup
//! steps install packages, the agent command calls its model) get a network
//! namespace of their own whose only way out is user-mode networking
//! (Debian's `slirp4netns`), started with `--disable-host-loopback`. The
//! host's loopback services (PostgreSQL trusting local connections, say)
//! are out of reach, and so are the host's abstract Unix sockets, which
//! belong to the host's network namespace. Every other run gets an empty
//! namespace: no network at all.
//!
//! slirp4netns opens its connections from the host, so "outbound" would
//! also reach what the host reaches besides the internet: a cloud's
//! metadata service (instance credentials), the private networks around
//! it, the host's own other addresses. The run's namespace fences those off
//! with "prohibit" routes ([`fence`]): link-local and metadata addresses
//! always, private ranges and the host's addresses unless the operator
//! allows them (`--run-allow-network 10.1.0.0/16,…`, for a package mirror
//! inside the network). The run has no capability to change its routes.
//!
//! The namespace is made before the run starts (by a short-lived thread
//! that unshares its own, fences it and keeps a descriptor of it),
//! slirp4netns attaches to it and says when its interface is up, and the
//! run joins it with `setns`. Dropping [`Outbound`] ends slirp4netns.

use std::io::{Read, Seek};

use ipnet::{IpNet, Ipv4Net};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long slirp4netns has to bring its interface up.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Where slirp4netns is, when it is installed (`FAILPASS_SLIRP4NETNS`, or
/// on the usual paths).
pub fn slirp4netns() -> Option<&'static PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            std::env::var_os("FAILPASS_SLIRP4NETNS")
                .map(PathBuf::from)
                .into_iter()
                .chain(["/usr/bin/slirp4netns", "/usr/local/bin/slirp4netns", "/bin/slirp4netns"].map(PathBuf::from))
                .find(|p| p.is_file())
        })
        .as_ref()
}

/// Whether runs that ask for the network can get it without the host's
/// loopback: root (namespaces), slirp4netns, `/dev/net/tun`, and the right
/// to set a namespace's routes (CAP_NET_ADMIN, which a container lacks
/// unless given `--cap-add NET_ADMIN`). Probed once.
pub fn outbound_available() -> bool {
    outbound_missing().is_none()
}

/// Why runs that ask for the network get none here, if they do not.
pub fn outbound_missing() -> Option<&'static str> {
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    MISSING
        .get_or_init(|| {
            if !super::network_isolation_available() {
                return Some("this process cannot create network namespaces".into());
            }
            if slirp4netns().is_none() {
                return Some("slirp4netns is not installed (apt-get install slirp4netns)".into());
            }
            if !std::path::Path::new("/dev/net/tun").exists() {
                return Some("there is no /dev/net/tun (a container: --device /dev/net/tun)".into());
            }
            // A namespace fenced as a run's would be, then dropped.
            new_namespace(fenced(&[], &host_addresses()))
                .err()
                .map(|e| format!("a run's network cannot be fenced off ({e}; a container: --cap-add NET_ADMIN)"))
        })
        .as_deref()
}

/// A network namespace with user-mode networking attached; slirp4netns
/// stops when this is dropped.
pub(super) struct Outbound {
    /// The namespace, for the run to `setns` into.
    pub(super) ns: OwnedFd,
    slirp: std::process::Child,
    /// Closing it tells slirp4netns to exit.
    exit: Option<OwnedFd>,
}

/// slirp4netns's own network (the gateway and the resolver live there).
const SLIRP: Ipv4Net = Ipv4Net::new_assert(std::net::Ipv4Addr::new(10, 0, 2, 0), 24);

/// `net` without `hole`: the halves of `net` that do not hold `hole`, down
/// to `hole`'s size (or `net` itself when they do not overlap, nothing when
/// `hole` covers it).
fn subtract(net: Ipv4Net, hole: Ipv4Net) -> Vec<Ipv4Net> {
    if hole.contains(&net) {
        return Vec::new();
    }
    if !net.contains(&hole) {
        return vec![net];
    }
    net.subnets(net.prefix_len() + 1).into_iter().flatten().flat_map(|half| subtract(half, hole)).collect()
}

/// The IPv4 networks a run with outbound network is fenced off from, given
/// the operator's `allowed` networks and the host's own `addresses`.
pub fn fenced(allowed: &[IpNet], addresses: &[std::net::Ipv4Addr]) -> Vec<Ipv4Net> {
    let holes: Vec<Ipv4Net> = allowed
        .iter()
        .filter_map(|n| match n {
            IpNet::V4(v4) => Some(*v4),
            IpNet::V6(_) => None,
        })
        .chain(std::iter::once(SLIRP))
        .collect();
    // The host's loopback is out of reach already: the namespace has a
    // loopback of its own, and slirp4netns forwards none.
    let mut private: Vec<Ipv4Net> = crate::networks::V4_PRIVATE.to_vec();
    private.extend(addresses.iter().filter(|a| !a.is_loopback()).filter_map(|a| Ipv4Net::new(*a, 32).ok()));
    for hole in &holes {
        private = private.into_iter().flat_map(|n| subtract(n, *hole)).collect();
    }
    let mut out: Vec<Ipv4Net> = crate::networks::V4_NEVER.to_vec();
    out.extend(private);
    out.sort();
    out.dedup();
    out
}

/// This machine's IPv4 addresses (its interfaces', as they are now).
pub fn host_addresses() -> Vec<std::net::Ipv4Addr> {
    let mut found = Vec::new();
    let mut addrs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we only read, then free.
    unsafe {
        if libc::getifaddrs(&mut addrs) != 0 {
            return found;
        }
        let mut cur = addrs;
        while !cur.is_null() {
            let a = &*cur;
            if !a.ifa_addr.is_null() && i32::from((*a.ifa_addr).sa_family) == libc::AF_INET {
                let sin = &*(a.ifa_addr as *const libc::sockaddr_in);
                found.push(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
            cur = a.ifa_next;
        }
        libc::freeifaddrs(addrs);
    }
    found
}

/// Adds a "prohibit" route for each of `nets` to the calling thread's
/// network namespace (a connection there fails at once: EACCES).
fn fence(nets: &[Ipv4Net]) -> std::io::Result<()> {
    use netlink_packet_core::{
        NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
    };
    use netlink_packet_route::route::{
        RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
    };
    use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
    use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    for (seq, net) in nets.iter().enumerate() {
        let mut route = RouteMessage::default();
        route.header = RouteHeader {
            address_family: AddressFamily::Inet,
            destination_prefix_length: net.prefix_len(),
            table: RouteHeader::RT_TABLE_MAIN,
            protocol: RouteProtocol::Static,
            scope: RouteScope::Universe,
            kind: RouteType::Prohibit,
            ..Default::default()
        };
        route.attributes.push(RouteAttribute::Destination(RouteAddress::Inet(net.network())));
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        header.sequence_number = seq as u32 + 1;
        let mut message = NetlinkMessage::new(header, NetlinkPayload::from(RouteNetlinkMessage::NewRoute(route)));
        message.finalize();
        let mut out = vec![0u8; message.buffer_len()];
        message.serialize(&mut out);
        socket.send(&out, 0)?;
        let mut answer: Vec<u8> = Vec::with_capacity(4096);
        socket.recv(&mut answer, 0)?;
        let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&answer)
            .map_err(|e| std::io::Error::other(format!("reading the kernel's answer about {net}: {e}")))?;
        if let NetlinkPayload::Error(e) = reply.payload
            && e.code.is_some()
        {
            return Err(std::io::Error::new(e.to_io().kind(), format!("fencing off {net}: {}", e.to_io())));
        }
    }
    Ok(())
}

/// A new network namespace, fenced off from `nets`, held by a descriptor.
fn new_namespace(nets: Vec<Ipv4Net>) -> std::io::Result<OwnedFd> {
    // unshare changes the calling thread's namespace only: a thread of its own does it.
    std::thread::spawn(move || {
        // SAFETY: plain system calls; the thread ends right after.
        let fd = unsafe {
            if libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::open(c"/proc/thread-self/ns/net".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            OwnedFd::from_raw_fd(fd)
        };
        fence(&nets)?;
        Ok(fd)
    })
    .join()
    .map_err(|_| std::io::Error::other("the thread making a network namespace panicked"))?
}

impl Outbound {
    /// A namespace with slirp4netns up on `tap0` (10.0.2.100/24, resolver
    /// 10.0.2.3), fenced off from everything [`fenced`] lists but the
    /// `allowed` networks, or why not. Blocks until the interface is up.
    pub(super) fn start(allowed: &[IpNet]) -> std::io::Result<Outbound> {
        let program = slirp4netns().ok_or_else(|| std::io::Error::other("slirp4netns is not installed"))?;
        let ns = new_namespace(fenced(allowed, &host_addresses()))?;
        let (ready_r, ready_w) = super::pipe()?;
        let (exit_r, exit_w) = super::pipe()?;
        let path = format!("/proc/{}/fd/{}", std::process::id(), ns.as_raw_fd());
        let mut log = tempfile::tempfile()?;
        let mut cmd = std::process::Command::new(program);
        cmd.args([
            "--configure",
            "--mtu=65520",
            "--disable-host-loopback",
            "--enable-sandbox",
            "--enable-seccomp",
            "--netns-type=path",
            "--ready-fd=3",
            "--exit-fd=4",
        ])
        .arg(&path)
        .arg("tap0")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        // A file, not a pipe: nobody reads it while the run goes on, and a full pipe would stall it.
        .stderr(log.try_clone()?);
        let (ready_fd, exit_fd) = (ready_w.as_raw_fd(), exit_r.as_raw_fd());
        // SAFETY: dup2 and prctl only, between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                // Out of the way of 3 and 4 first, then there (dup2 leaves the
                // copies open across exec).
                let (r, e) = (libc::fcntl(ready_fd, libc::F_DUPFD, 10), libc::fcntl(exit_fd, libc::F_DUPFD, 10));
                if r < 0 || e < 0 || libc::dup2(r, 3) < 0 || libc::dup2(e, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut slirp = cmd.spawn()?;
        drop((ready_w, exit_r));
        match wait_ready(&ready_r) {
            Ok(()) => Ok(Outbound { ns, slirp, exit: Some(exit_w) }),
            Err(e) => {
                let _ = slirp.kill();
                let _ = slirp.wait();
                let mut said = String::new();
                let _ = log.seek(std::io::SeekFrom::Start(0)).and_then(|_| log.read_to_string(&mut said));
                Err(std::io::Error::other(format!(
                    "slirp4netns did not bring the run's network up: {e}{}",
                    said.lines().last().map(|l| format!(" ({l})")).unwrap_or_default()
                )))
            }
        }
    }
}

/// Waits for slirp4netns to write its ready byte.
fn wait_ready(ready: &OwnedFd) -> std::io::Result<()> {
    let started = Instant::now();
    loop {
        let left = READY_WITHIN.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(std::io::Error::other(format!("no answer within {} s", READY_WITHIN.as_secs())));
        }
        let mut pfd = libc::pollfd { fd: ready.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: poll on one descriptor we own.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            continue;
        }
        let mut byte = [0u8; 1];
        // SAFETY: read into a buffer we own.
        let r = unsafe { libc::read(ready.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        return if r == 1 { Ok(()) } else { Err(std::io::Error::other("it exited before its interface was up")) };
    }
}

impl Drop for Outbound {
    /// The run is over: slirp4netns is told to go and killed (it holds
    /// nothing worth a clean exit), which ends it at once.
    fn drop(&mut self) {
        drop(self.exit.take());
        let _ = self.slirp.kill();
        let _ = self.slirp.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(v: &[Ipv4Net]) -> Vec<String> {
        v.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_fence_keeps_metadata_out_always_and_private_networks_unless_allowed() {
        let host = "192.0.2.2".parse().unwrap();
        let all = nets(&fenced(&[], &[host, "127.0.0.1".parse().unwrap()]));
        for n in ["169.254.0.0/16", "100.100.100.200/32", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"] {
            assert!(all.contains(&n.to_owned()), "{n}: {all:?}");
        }
        assert!(all.contains(&"192.0.2.2/32".to_owned()), "the host's own address: {all:?}");
        assert!(!all.iter().any(|n| n.starts_with("127.")), "its own loopback is the run's: {all:?}");
        // slirp4netns's own network stays: 10.0.0.0/8 is fenced around 10.0.2.0/24.
        assert!(!all.contains(&"10.0.0.0/8".to_owned()) && all.contains(&"10.128.0.0/9".to_owned()), "{all:?}");
        assert!(
            !all.iter()
                .any(|n| n.parse::<Ipv4Net>().unwrap().contains(&"10.0.2.3".parse::<std::net::Ipv4Addr>().unwrap()))
        );
        let allowed =
            ["10.1.0.0/16".parse().unwrap(), "192.0.2.2/32".parse().unwrap(), "169.254.0.0/16".parse().unwrap()];
        let some = fenced(&allowed, &[host]);
        let reach = |ip: &str| !some.iter().any(|n| n.contains(&ip.parse::<std::net::Ipv4Addr>().unwrap()));
        assert!(reach("10.1.2.3") && reach("192.0.2.2") && reach("8.8.8.8"));
        assert!(!reach("10.9.9.9") && !reach("169.254.169.254"), "metadata stays fenced whatever is allowed");
    }
}
