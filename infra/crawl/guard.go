package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ErrBlocked marks a target refused by the SSRF guard (bad URL shape or a
// non-public address).
var ErrBlocked = errors.New("crawl: target refused")

// blockedRange is one address block the guard refuses unless private targets
// are allowed.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedRanges lists the non-public blocks. Order matters only for the
// reason reported: more specific blocks come first.
var blockedRanges = []blockedRange{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// nat64 is the well-known NAT64 prefix; its low 32 bits are an IPv4 address
// that a NAT64 gateway would connect to, so that embedded address is checked.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// classifyIP reports why ip must not be contacted, or "" if it is public.
// IPv4-mapped and NAT64 forms are judged by the IPv4 address they carry.
func classifyIP(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

// checkIP returns an error wrapping ErrBlocked when ip is not public and
// private targets are not allowed.
func checkIP(ip netip.Addr, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	if reason := classifyIP(ip); reason != "" {
		return fmt.Errorf("%w: %s is a %s address (set CRAWL_ALLOW_PRIVATE=true to allow non-public targets)",
			ErrBlocked, ip, reason)
	}
	return nil
}

// validateURL parses rawURL and checks the parts the guard cares about before
// any network activity: scheme, host presence and absence of credentials.
func validateURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, fmt.Errorf("%w: invalid URL: %w", ErrBlocked, err)
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL is shared by the initial request and every redirect hop.
func checkURL(u *url.URL) error {
	switch u.Scheme {
	case "http", "https":
	default:
		return fmt.Errorf("%w: scheme %q not allowed, only http and https", ErrBlocked, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in URL are not allowed", ErrBlocked)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: URL has no host", ErrBlocked)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: invalid port %q", ErrBlocked, p)
		}
	}
	return nil
}

// lookupFunc resolves a host name to addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// dialFunc opens a connection to an already vetted address.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// guardedDialer resolves the host itself and vets every address right before
// connecting, so a DNS answer that changes between validation and connect
// (rebinding) cannot smuggle in a private target.
type guardedDialer struct {
	allowPrivate bool
	lookup       lookupFunc
	dial         dialFunc
}

func (d *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("crawl: split %q: %w", addr, err)
	}
	var ips []netip.Addr
	if ip, perr := netip.ParseAddr(host); perr == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = d.lookup(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("crawl: resolve %s: %w", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("crawl: resolve %s: no addresses", host)
		}
	}
	// Refuse the whole host if any answer is non-public: mixing public and
	// private records is a classic rebinding trick.
	for _, ip := range ips {
		if err := checkIP(ip, d.allowPrivate); err != nil {
			return nil, fmt.Errorf("host %s: %w", host, err)
		}
	}
	var errs []error
	for _, ip := range ips {
		conn, err := d.dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("crawl: connect %s: %w", addr, errors.Join(errs...))
}

func defaultLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	return ips, nil
}
