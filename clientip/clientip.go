// Package clientip finds the address of the client behind trusted proxies:
// the proxies an operator lists (SECKILL_TRUSTED_PROXIES), the header they
// write (SECKILL_PROXY_HEADER), and the walk of that header that believes
// only what a trusted hop vouches for.
package clientip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParseProxies parses a comma-separated list of CIDRs and bare IP
// addresses (SECKILL_TRUSTED_PROXIES): the peers whose proxy header the API
// believes. Anything it cannot parse is an error naming the entry, so a
// typo stops the API at start instead of trusting the wrong hosts.
func ParseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(f, "/") {
			pp, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q is not a CIDR (like 10.0.0.0/8) or an IP address", f)
			}
			p = pp.Masked()
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
		} else {
			a, err := netip.ParseAddr(f)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("trusted proxy %q is not a CIDR (like 10.0.0.0/8) or an IP address", f)
			}
			a = a.Unmap()
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p)
	}
	return out, nil
}

// CheckProxies refuses a proxy header without trusted proxies (believed
// from any peer, it would let every client choose its IP: refusing to start
// is safer than guessing who the proxies are), trusted proxies without a
// header (a setting that would silently do nothing), and a header that is
// not a plain address list.
func CheckProxies(header string, trusted []netip.Prefix) error {
	for i := 0; i < len(header); i++ {
		if c := header[i]; !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("SECKILL_PROXY_HEADER=%q is not a header name (like X-Forwarded-For)", header)
		}
	}
	switch {
	case strings.EqualFold(header, "Forwarded"):
		return errors.New("SECKILL_PROXY_HEADER=Forwarded (RFC 7239, for=...) is not supported: " +
			"name a header that holds a plain address list, like X-Forwarded-For")
	case header != "" && len(trusted) == 0:
		return errors.New("SECKILL_PROXY_HEADER is set but SECKILL_TRUSTED_PROXIES is empty: list the proxies' addresses " +
			"(CIDRs or IPs, e.g. 10.0.0.0/8), or unset the header; a header believed from any peer lets every client choose its IP")
	case header == "" && len(trusted) > 0:
		return errors.New("SECKILL_TRUSTED_PROXIES is set but SECKILL_PROXY_HEADER is not: name the header the proxies write (e.g. X-Forwarded-For)")
	}
	return nil
}

// Resolve returns the address of the client behind a chain of trusted
// proxies. peer is the TCP peer; header holds every occurrence of the proxy
// header in order, each a comma-separated list that proxies append to.
//
// Only a trusted peer's header is read at all: anyone else could write
// anything into it. Then the list is walked from the right, the end each
// trusted proxy appended to: the first address that is not a trusted proxy
// is the client, as the last trusted proxy saw it; what lies left of it was
// written by the client and proves nothing. An entry that does not parse
// stops the walk, and the last address vouched for (a trusted hop, or the
// peer) is the answer: garbage never becomes a rate-limit key. When every
// hop is trusted, the left-most one is the client.
func Resolve(peer netip.Addr, trusted []netip.Prefix, header ...string) netip.Addr {
	peer = peer.Unmap()
	if !Trusted(peer, trusted) {
		return peer
	}
	client := peer
	for i := len(header) - 1; i >= 0; i-- {
		list := header[i]
		for list != "" {
			hop := list
			if j := strings.LastIndexByte(list, ','); j >= 0 {
				hop, list = list[j+1:], list[:j]
			} else {
				list = ""
			}
			hop = strings.TrimSpace(hop)
			if hop == "" {
				continue // an empty list element carries nothing (RFC 9110 §5.6.1)
			}
			a, ok := parseHop(hop)
			if !ok {
				return client
			}
			client = a
			if !Trusted(a, trusted) {
				return a
			}
		}
	}
	return client
}

// parseHop parses one header entry: an address, or an address with a port
// as some proxies write it ("203.0.113.7:51234", "[2001:db8::1]:443").
func parseHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
				return parseHop(s[1 : len(s)-1])
			}
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	if a.Zone() != "" { // a zone means nothing off the host that wrote it
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// Trusted says whether a is one of the trusted proxies.
func Trusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
