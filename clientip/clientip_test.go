package clientip_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/clientip"
)

func TestParseTrustedProxies(t *testing.T) {
	got, err := clientip.ParseProxies(" 10.0.0.0/8, 192.168.1.7 ,,2001:db8::/32, 172.16.5.9/12, ::ffff:10.1.2.3, fd00::1 ")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("fd00::1/128"),
	}, got)
	empty, err := clientip.ParseProxies("")
	require.NoError(t, err)
	require.Empty(t, empty)
	for _, bad := range []string{"10.0.0.0/33", "10.0.0", "example.com", "10.0.0.0/8,nope", "fe80::1%eth0", "1.2.3.4:80", "10.0.0.0/"} {
		_, err := clientip.ParseProxies(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "is not a CIDR", bad)
	}
}

func TestCheckProxies(t *testing.T) {
	some := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	require.NoError(t, clientip.CheckProxies("", nil))
	require.NoError(t, clientip.CheckProxies("X-Forwarded-For", some))
	require.ErrorContains(t, clientip.CheckProxies("X-Forwarded-For", nil), "SECKILL_TRUSTED_PROXIES is empty")
	require.ErrorContains(t, clientip.CheckProxies("", some), "SECKILL_PROXY_HEADER is not")
	require.ErrorContains(t, clientip.CheckProxies("X-Forwarded-For:", some), "is not a header name")
	require.ErrorContains(t, clientip.CheckProxies("forwarded", some), "not supported")
	require.NoError(t, clientip.CheckProxies("X-Real-IP", some))
}

// The client is the right-most address that is not a trusted proxy, and
// only a trusted peer's header is read at all.
func TestClientIP(t *testing.T) {
	trusted, err := clientip.ParseProxies("10.0.0.0/8, 2001:db8:cafe::/48")
	require.NoError(t, err)
	proxy := netip.MustParseAddr("10.0.0.2")
	for _, c := range []struct {
		name   string
		peer   string
		header []string
		want   string
	}{
		{"no header", "10.0.0.2", nil, "10.0.0.2"},
		{"untrusted peer: header ignored", "203.0.113.9", []string{"1.2.3.4"}, "203.0.113.9"},
		{"untrusted peer, header of trusted addresses", "203.0.113.9", []string{"10.0.0.1"}, "203.0.113.9"},
		{"one hop", "10.0.0.2", []string{"198.51.100.1"}, "198.51.100.1"},
		{"spoofed left part is ignored", "10.0.0.2", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"chain of trusted proxies", "10.0.0.2", []string{"6.6.6.6, 198.51.100.1, 10.1.1.1, 10.2.2.2"}, "198.51.100.1"},
		{"several header lines, last wins", "10.0.0.2", []string{"6.6.6.6", "198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"several header lines, walk continues", "10.0.0.2", []string{"198.51.100.1", "10.9.9.9"}, "198.51.100.1"},
		{"all trusted: left-most", "10.0.0.2", []string{"10.3.3.3, 10.4.4.4"}, "10.3.3.3"},
		{"garbage at the right: the peer", "10.0.0.2", []string{"198.51.100.1, not-an-ip"}, "10.0.0.2"},
		{"garbage behind a trusted hop: that hop", "10.0.0.2", []string{"bogus, 10.7.7.7"}, "10.7.7.7"},
		{"garbage left of the client is never read", "10.0.0.2", []string{"bogus, 198.51.100.1"}, "198.51.100.1"},
		{"empty elements are skipped", "10.0.0.2", []string{" , 198.51.100.1 ,, "}, "198.51.100.1"},
		{"empty header", "10.0.0.2", []string{""}, "10.0.0.2"},
		{"with a port", "10.0.0.2", []string{"198.51.100.1:51234"}, "198.51.100.1"},
		{"IPv6", "10.0.0.2", []string{"2001:db8::7"}, "2001:db8::7"},
		{"IPv6 in brackets with a port", "10.0.0.2", []string{"[2001:db8::7]:443"}, "2001:db8::7"},
		{"IPv6 in brackets", "10.0.0.2", []string{"[2001:db8::7]"}, "2001:db8::7"},
		{"IPv4-mapped IPv6 is IPv4", "10.0.0.2", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"mapped peer is trusted", "::ffff:10.0.0.2", []string{"198.51.100.1"}, "198.51.100.1"},
		{"trusted IPv6 proxy", "2001:db8:cafe::1", []string{"198.51.100.1, 2001:db8:cafe::2"}, "198.51.100.1"},
		{"a zone is garbage", "10.0.0.2", []string{"fe80::1%eth0"}, "10.0.0.2"},
		{"a CIDR is garbage", "10.0.0.2", []string{"198.51.100.0/24"}, "10.0.0.2"},
		{"a host name is garbage", "10.0.0.2", []string{"evil.example"}, "10.0.0.2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := clientip.Resolve(netip.MustParseAddr(c.peer), trusted, c.header...)
			require.Equal(t, c.want, got.String())
		})
	}
	require.Equal(t, proxy, clientip.Resolve(proxy, nil, "1.2.3.4"), "nothing trusted: the peer")
}

// Whatever a client writes into the header, the answer is the peer or an
// address the header really holds, never something made up, and an
// untrusted peer's header is never read. `make test` runs it with -fuzz.
func FuzzClientIP(f *testing.F) {
	for _, s := range []string{"", "1.2.3.4", "6.6.6.6, 198.51.100.1, 10.1.1.1", "bogus, 10.7.7.7", " , ,",
		"[2001:db8::7]:443", "::ffff:1.2.3.4", "fe80::1%eth0", "1.2.3.4:99999", "[]", "10.0.0.1,,10.0.0.2"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	trusted, err := clientip.ParseProxies("10.0.0.0/8, 2001:db8:cafe::/48")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, header string, fromProxy bool) {
		peer := netip.MustParseAddr("203.0.113.9")
		if fromProxy {
			peer = netip.MustParseAddr("10.0.0.2")
		}
		got := clientip.Resolve(peer, trusted, header, header)
		if !fromProxy || got == peer {
			require.Equal(t, peer, got)
			return
		}
		require.True(t, got.IsValid())
		require.Empty(t, got.Zone())
		require.Contains(t, headerAddrs(header), got, "an address the header holds")
	})
}

// headerAddrs is every address written in a header value, in any form.
func headerAddrs(header string) []netip.Addr {
	var out []netip.Addr
	for _, e := range strings.Split(header, ",") {
		e = strings.TrimSpace(e)
		if a, err := netip.ParseAddr(e); err == nil {
			out = append(out, a.Unmap())
		}
		if ap, err := netip.ParseAddrPort(e); err == nil {
			out = append(out, ap.Addr().Unmap())
		}
		if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}
