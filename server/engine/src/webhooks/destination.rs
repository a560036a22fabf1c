//! Where a webhook may be sent: an endpoint's URL as a tenant enters it
//! ([`EndpointUrl`]), and the address filter the relay applies to every
//! address the URL's host resolves to ([`is_public`]), so that a tenant
//! cannot aim a webhook at the network AdmitOne runs in. Pure functions,
//! no I/O: the relay (`server/src/relay.rs`) does the resolving.

use super::WebhookError;

/// An endpoint URL: `http(s)://host…`, no spaces, at most 2,000 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl(String);

impl EndpointUrl {
    pub fn parse(raw: &str) -> Result<Self, WebhookError> {
        let url = raw.trim();
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or(WebhookError::InvalidUrl)?;
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        // No `user:password@`: it hides the real host from people reading it.
        let valid = url.len() <= 2_000
            && !host.is_empty()
            && !host.contains('@')
            && !host.starts_with(['.', ':'])
            && !url.chars().any(|c| c.is_whitespace() || c.is_control());
        if valid {
            Ok(Self(url.to_owned()))
        } else {
            Err(WebhookError::InvalidUrl)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `ip` is on the public internet: not loopback, private,
/// link-local (cloud metadata lives there), shared, documentation,
/// benchmarking, reserved, multicast or unspecified. Tenants' endpoints
/// must be public, so that a webhook cannot be aimed at the network
/// AdmitOne runs in.
///
/// IPv6 addresses that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`,
/// IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
/// `2002:aabb:ccdd::`) reach that IPv4 address through a translator or
/// tunnel, so they are decided by it. The local-use NAT64 prefix
/// `64:ff9b:1::/48` only ever leads into a private network, and is refused.
pub fn is_public(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if v6.is_loopback() || v6.is_unspecified() {
                return false;
            }
            if let Some(v4) = embedded_v4(v6) {
                return is_public_v4(v4);
            }
            let segments = v6.segments();
            let first = segments[0];
            !(v6.is_multicast()
                // unique local fc00::/7
                || (first & 0xfe00) == 0xfc00
                // link-local fe80::/10
                || (first & 0xffc0) == 0xfe80
                // site-local fec0::/10 (deprecated, still routed inside sites)
                || (first & 0xffc0) == 0xfec0
                // local-use NAT64 64:ff9b:1::/48
                || (first == 0x64 && segments[1] == 0xff9b && segments[2] == 1)
                // documentation 2001:db8::/32
                || (first == 0x2001 && segments[1] == 0x0db8))
        }
    }
}

fn is_public_v4(v4: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_documentation()
        || v4.is_multicast()
        || a == 0
        // shared address space 100.64.0.0/10
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments 192.0.0.0/24
        || (a == 192 && b == 0 && c == 0)
        // benchmarking 198.18.0.0/15
        || (a == 198 && (18..20).contains(&b))
        // reserved 240.0.0.0/4
        || a >= 240)
}

/// The IPv4 address an IPv6 address carries, in the forms that deliver to
/// it: IPv4-mapped, IPv4-compatible, NAT64 well-known prefix, 6to4.
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    use std::net::Ipv4Addr;
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // IPv4-compatible ::a.b.c.d (:: and ::1 are handled before).
    if s[..6] == [0; 6] {
        return Some(low(s[6], s[7]));
    }
    // NAT64 well-known prefix 64:ff9b::/96.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return Some(low(s[6], s[7]));
    }
    // 6to4 2002:aabb:ccdd::/48.
    if s[0] == 0x2002 {
        return Some(low(s[1], s[2]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_http_or_https_with_a_host() {
        assert!(EndpointUrl::parse(" https://hooks.example.com/admitone ").is_ok());
        assert!(EndpointUrl::parse("http://127.0.0.1:8080/x?y=1").is_ok());
        for bad in [
            "",
            "ftp://example.com",
            "https://",
            "https:///path",
            "https://exa mple.com",
            "javascript:alert(1)",
            "https://example.com/a\u{7}b",
        ] {
            assert!(EndpointUrl::parse(bad).is_err(), "{bad:?}");
        }
        assert!(EndpointUrl::parse(&format!("https://e.com/{}", "a".repeat(2_000))).is_err());
    }

    #[test]
    fn only_public_addresses_are_delivered_to() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(private.parse().expect("ip")), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(is_public(public.parse().expect("ip")), "{public}");
        }
        assert!(EndpointUrl::parse("https://user:pw@example.com/hook").is_err());
    }

    /// Every special-purpose range, including IPv6 forms that carry an
    /// IPv4 address (decided by that address).
    #[test]
    fn special_ranges_and_embedded_ipv4_forms_are_not_public() {
        let table: &[(&str, bool)] = &[
            // IPv4
            ("93.184.216.34", true),
            ("8.8.8.8", true),
            ("192.0.0.1", false),       // IETF protocol assignments
            ("192.0.0.170", false),     // NAT64 discovery
            ("240.0.0.1", false),       // reserved
            ("250.1.2.3", false),       // reserved
            ("255.255.255.255", false), // broadcast
            ("192.0.2.1", false),       // documentation
            ("198.18.0.1", false),      // benchmarking
            // IPv4-mapped and IPv4-compatible
            ("::ffff:10.0.0.1", false),
            ("::ffff:8.8.8.8", true),
            ("::127.0.0.1", false),
            ("::10.0.0.1", false),
            ("::169.254.169.254", false),
            ("::8.8.8.8", true),
            // NAT64 well-known prefix (RFC 6052)
            ("64:ff9b::127.0.0.1", false),
            ("64:ff9b::a9fe:a9fe", false), // 169.254.169.254
            ("64:ff9b::10.1.2.3", false),
            ("64:ff9b::8.8.8.8", true),
            // Local-use NAT64 (RFC 8215): private networks by definition
            ("64:ff9b:1::8.8.8.8", false),
            ("64:ff9b:1:abcd::1", false),
            // 6to4 (RFC 3056): the IPv4 address in bits 16..48
            ("2002:7f00:1::1", false),    // 127.0.0.1
            ("2002:a00:1::1", false),     // 10.0.0.1
            ("2002:a9fe:a9fe::1", false), // 169.254.169.254
            ("2002:c0a8:101::1", false),  // 192.168.1.1
            ("2002:808:808::1", true),    // 8.8.8.8
            // Site-local (deprecated, still routed internally)
            ("fec0::1", false),
            ("feff::1", false),
            // Unique local, link-local, loopback, unspecified, multicast
            ("fd12:3456::1", false),
            ("fe80::1", false),
            ("::1", false),
            ("::", false),
            ("ff02::1", false),
            // Documentation
            ("2001:db8::1", false),
            // Public IPv6
            ("2606:4700:4700::1111", true),
            ("2a00:1450:4001::200e", true),
        ];
        for (ip, public) in table {
            assert_eq!(is_public(ip.parse().expect("ip")), *public, "{ip}");
        }
    }
}
