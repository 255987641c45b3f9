//! Whose IPv4 networks are whose, for what failpass connects to on others'
//! behalf: outgoing hooks (`hooks::addresses`) and runs with outbound
//! network (`runner::sandbox::net`). Both never reach [`V4_NEVER`], and
//! reach [`V4_PRIVATE`] only where an operator's flag allows it
//! (`--hook-allow-network`, `--run-allow-network`, read by [`parse`]).

use std::net::{IpAddr, Ipv4Addr};

use ipnet::{IpNet, Ipv4Net};

const fn net(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

/// Never reached: "this network", link-local (where clouds serve instance
/// credentials), a cloud metadata address outside it, multicast, and the
/// reserved range with broadcast.
pub const V4_NEVER: &[Ipv4Net] = &[
    net(0, 0, 0, 0, 8),
    net(169, 254, 0, 0, 16),
    net(100, 100, 100, 200, 32),
    net(224, 0, 0, 0, 4),
    net(240, 0, 0, 0, 4),
];

/// Someone's private networks: RFC 1918, CGNAT, benchmarking and IETF
/// protocol assignments (loopback is each caller's own matter).
pub const V4_PRIVATE: &[Ipv4Net] = &[
    net(10, 0, 0, 0, 8),
    net(172, 16, 0, 0, 12),
    net(192, 168, 0, 0, 16),
    net(100, 64, 0, 0, 10),
    net(198, 18, 0, 0, 15),
    net(192, 0, 0, 0, 24),
];

/// Whether `ip` is in any of `nets`.
pub fn contains(nets: &[Ipv4Net], ip: Ipv4Addr) -> bool {
    nets.iter().any(|n| n.contains(&ip))
}

/// A flag's networks (CIDRs; a bare address is one host), the error
/// naming the flag and the value at fault.
pub fn parse<S: AsRef<str>>(flag: &str, values: &[S]) -> Result<Vec<IpNet>, String> {
    let mut nets = Vec::new();
    for v in values.iter().map(|v| v.as_ref().trim()).filter(|v| !v.is_empty()) {
        let net = v
            .parse::<IpNet>()
            .or_else(|_| v.parse::<IpAddr>().map(IpNet::from))
            .map_err(|_| format!("{flag}: `{v}` is not a network; give CIDRs such as 10.0.0.0/8 or fd00::/8"))?;
        nets.push(net.trunc());
    }
    Ok(nets)
}
