//! Where hooks may post: the public internet by default, never a cloud's
//! metadata service, and a private network only where the operator allows
//! it (`--hook-allow-network 10.0.0.0/8,…`, on the server and on every
//! worker, since workers deliver). Checked when a hook is made (its address,
//! if it is an IP) and at each delivery, after its name resolves and before
//! any connection, on every address the name resolves to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::networks;

/// The flag that lets hooks post into private networks.
pub const FLAG: &str = "--hook-allow-network";

/// Why an address is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Link-local (where clouds serve instance credentials), a known
    /// metadata address, unspecified, multicast or broadcast: never.
    Never,
    /// Loopback, RFC 1918, CGNAT, ULA and the like: only where allowed.
    Private,
}

impl Refusal {
    /// What to tell whoever made the hook, naming the address.
    pub fn explain(&self, what: &str) -> String {
        match self {
            Refusal::Never => {
                format!("{what} is a link-local, cloud metadata or non-unicast address: hooks are never posted there")
            }
            Refusal::Private => format!(
                "{what} is a loopback or private address (RFC 1918, CGNAT, ULA): hooks are not posted into private \
                 networks unless the operator allows them, e.g. `failpass serve {FLAG} 10.0.0.0/8` (and the same on \
                 every `failpass worker`)"
            ),
        }
    }
}

/// The networks an operator lets hooks post into, besides the public internet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookNetworks {
    allowed: Vec<IpNet>,
}

impl HookNetworks {
    pub fn new(allowed: Vec<IpNet>) -> Self {
        Self { allowed }
    }

    /// `--hook-allow-network`'s values (CIDRs; a bare address is one host);
    /// the error names the value at fault.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Self, String> {
        Ok(Self { allowed: crate::networks::parse(FLAG, values)? })
    }

    pub fn allowed(&self) -> &[IpNet] {
        &self.allowed
    }

    /// Whether a hook may be posted to `ip`.
    pub fn check(&self, ip: IpAddr) -> Result<(), Refusal> {
        let ip = unwrap_ipv4(ip);
        match class(ip) {
            Class::Public => Ok(()),
            Class::Never => Err(Refusal::Never),
            Class::Private if self.allowed.iter().any(|n| n.contains(&ip)) => Ok(()),
            Class::Private => Err(Refusal::Private),
        }
    }
}

enum Class {
    Public,
    Private,
    Never,
}

/// An IPv4 address hidden in IPv6 (mapped, compatible, NAT64 and its
/// local-use prefix, 6to4) as itself, so it is judged as what it reaches.
fn unwrap_ipv4(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let (s, o) = (v6.segments(), v6.octets());
    let compatible = s[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_loopback() && !v6.is_unspecified();
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..3] == [0x64, 0xff9b, 1];
    if compatible || nat64 {
        return IpAddr::V4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    if s[0] == 0x2002 {
        return IpAddr::V4(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    ip
}

fn class(ip: IpAddr) -> Class {
    const AWS_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
    match ip {
        IpAddr::V4(v4) => {
            if networks::contains(networks::V4_NEVER, v4) {
                Class::Never
            } else if v4.is_loopback() || networks::contains(networks::V4_PRIVATE, v4) {
                Class::Private
            } else {
                Class::Public
            }
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            let teredo = v6.segments()[..2] == [0x2001, 0];
            let unique_local = (first & 0xfe00) == 0xfc00;
            let site_local = (first & 0xffc0) == 0xfec0;
            if v6.is_unicast_link_local() || v6.is_unspecified() || v6.is_multicast() || v6 == AWS_METADATA_V6 || teredo
            {
                Class::Never
            } else if v6.is_loopback() || unique_local || site_local {
                Class::Private
            } else {
                Class::Public
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn public_addresses_pass_private_ones_only_where_allowed_and_metadata_never() {
        let none = HookNetworks::default();
        for public in ["8.8.8.8", "203.0.113.9", "2001:db8::1", "::ffff:8.8.8.8"] {
            assert_eq!(none.check(ip(public)), Ok(()), "{public}");
        }
        for private in [
            "127.0.0.1",
            "127.9.9.9",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.10",
            "100.64.0.1",
            "100.127.255.254",
            "198.18.0.1",
            "::1",
            "fd12:3456::1",
            "fc00::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            "2002:a00:1::1",
            "192.0.0.8",
        ] {
            assert_eq!(none.check(ip(private)), Err(Refusal::Private), "{private}");
        }
        for never in [
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "fe80::1",
            "::",
            "ff02::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "2002:a9fe:a9fe::1",
            "2001:0:4136:e378::1",
            "240.0.0.1",
        ] {
            assert_eq!(none.check(ip(never)), Err(Refusal::Never), "{never}");
        }
        let some = HookNetworks::parse(&["10.0.0.0/8", "127.0.0.1", " fd00::/8 "]).unwrap();
        for ok in ["10.1.2.3", "127.0.0.1", "::ffff:10.0.0.1", "fd12::1"] {
            assert_eq!(some.check(ip(ok)), Ok(()), "{ok}");
        }
        for refused in ["127.0.0.2", "192.168.1.1", "100.64.0.1"] {
            assert_eq!(some.check(ip(refused)), Err(Refusal::Private), "{refused}");
        }
        let everything = HookNetworks::parse(&["0.0.0.0/0", "::/0"]).unwrap();
        assert_eq!(everything.check(ip("169.254.169.254")), Err(Refusal::Never), "metadata stays refused");
    }

    #[test]
    fn a_bad_network_is_named_and_the_refusal_names_the_flag() {
        let e = HookNetworks::parse(&["10.0.0.0/33"]).unwrap_err();
        assert!(e.contains("`10.0.0.0/33`") && e.contains(FLAG), "{e}");
        assert!(HookNetworks::parse(&["intranet"]).is_err());
        assert!(Refusal::Private.explain("10.0.0.1").contains("--hook-allow-network 10.0.0.0/8"));
    }
}
