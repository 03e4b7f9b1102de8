package crawl

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/deer-go/deer-go/internal/testkit"
)

func TestClassifyIP(t *testing.T) {
	tests := []struct {
		ip   string
		want string
	}{
		// IPv4
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "link-local"},
		{"100.64.0.1", "shared address space (CGNAT)"},
		{"100.127.255.255", "shared address space (CGNAT)"},
		{"100.128.0.1", ""},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"224.0.0.251", "multicast"},
		{"239.255.255.250", "multicast"},
		{"255.255.255.255", "broadcast"},
		// IPv6
		{"2606:4700:4700::1111", ""},
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"ff02::1", "multicast"},
		// IPv4-mapped IPv6 and NAT64 carry an IPv4 target.
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::ffff:100.64.1.1", "shared address space (CGNAT)"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::127.0.0.1", "loopback"},
		{"64:ff9b::192.168.0.1", "private"},
		{"64:ff9b::8.8.8.8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.ip)
			if got := classifyIP(ip); got != tt.want {
				t.Fatalf("classifyIP(%s) = %q, want %q", tt.ip, got, tt.want)
			}
			err := checkIP(ip, false)
			if (err != nil) != (tt.want != "") {
				t.Fatalf("checkIP(%s) = %v, want blocked=%v", tt.ip, err, tt.want != "")
			}
			if err != nil {
				if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "CRAWL_ALLOW_PRIVATE") || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q should wrap ErrBlocked, give the reason and mention CRAWL_ALLOW_PRIVATE", err)
				}
			}
			if err := checkIP(ip, true); err != nil {
				t.Errorf("checkIP(%s, allowPrivate) = %v, want nil", tt.ip, err)
			}
		})
	}
	if got := classifyIP(netip.Addr{}); got == "" {
		t.Error("zero Addr must not be classified public")
	}
}

func TestValidateURL(t *testing.T) {
	tests := []struct {
		raw     string
		wantErr string
	}{
		{"http://example.com/a?b=c#frag", ""},
		{"https://example.com:8443/", ""},
		{"  https://example.com/  ", ""},
		{"HTTPS://Example.com/", ""},
		{"http://[2606:4700::1]/", ""},
		{"ftp://example.com/", "scheme"},
		{"file:///etc/passwd", "scheme"},
		{"gopher://example.com/", "scheme"},
		{"javascript:alert(1)", "scheme"},
		{"example.com/path", "scheme"},
		{"//example.com/", "scheme"},
		{"http://user:pass@example.com/", "credentials"},
		{"http://user@example.com/", "credentials"},
		{"http:///path", "no host"},
		{"http://:80/", "no host"},
		{"http://example.com:0/", "port"},
		{"http://example.com:99999/", "port"},
		{"http://exa mple.com/", "invalid URL"},
		{"", "scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			_, err := validateURL(tt.raw)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validateURL(%q) = %v, want ok", tt.raw, err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validateURL(%q) = %v, want ErrBlocked mentioning %q", tt.raw, err, tt.wantErr)
			}
		})
	}
}

func FuzzValidateURL(f *testing.F) {
	for _, seed := range []string{
		"http://example.com/", "https://a.b:443/x?y#z", "http://user:pw@h/", "ftp://x/",
		"http://[::1]:80/", "http://[fe80::1%25eth0]/", "http://0x7f.1/", "http://127.1/",
		"http://%zz/", "https://例子.测试/", "http://h:0/", "\x00http://h/", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := validateURL(raw)
		if err != nil {
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("error %v does not wrap ErrBlocked", err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
		if u.User != nil {
			t.Fatalf("accepted credentials in %q", raw)
		}
		if u.Hostname() == "" {
			t.Fatalf("accepted empty host in %q", raw)
		}
		// What we accept must survive the round trip into a request.
		if _, err := http.NewRequest(http.MethodGet, u.String(), nil); err != nil {
			t.Fatalf("accepted %q but cannot build request: %v", raw, err)
		}
	})
}

// redirectTo answers every request with a redirect to target.
func redirectTo(t *testing.T, target string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// publicView makes the crawler believe a few names resolve to public
// addresses while actually connecting to loopback test servers. Only the
// lookup and the final dial are swapped; the IP check in between is the
// production code path.
func publicView(c *Crawler, names map[string][]netip.Addr) {
	c.dialer.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		if ips, ok := names[host]; ok {
			return ips, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var d net.Dialer
	c.dialer.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	}
}

func TestGuardLoopback(t *testing.T) {
	site := testkit.NewSite(t)
	tests := []struct {
		name    string
		allow   bool
		wantErr bool
	}{
		{"refused by default", false, true},
		{"allowed with AllowPrivate", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := site.Hits("/article")
			page, err := New(Options{AllowPrivate: tt.allow}).Fetch(context.Background(), site.URL+"/article")
			if tt.wantErr {
				if !errors.Is(err, ErrBlocked) {
					t.Fatalf("err = %v, want ErrBlocked", err)
				}
				if !strings.Contains(err.Error(), "CRAWL_ALLOW_PRIVATE") || !strings.Contains(err.Error(), "loopback") {
					t.Errorf("error %q should say loopback and mention CRAWL_ALLOW_PRIVATE", err)
				}
				if site.Hits("/article") != before {
					t.Error("request reached the server despite the guard")
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if page.Title == "" {
				t.Error("empty title")
			}
		})
	}
}

func TestGuardResolvedAddresses(t *testing.T) {
	site := testkit.NewSite(t)
	port := mustPort(t, site.URL)
	public := netip.MustParseAddr("203.0.113.7")
	names := map[string][]netip.Addr{
		"public.test":   {public},
		"rebind.test":   {netip.MustParseAddr("127.0.0.1")},
		"mixed.test":    {public, netip.MustParseAddr("10.0.0.5")},
		"mapped.test":   {netip.MustParseAddr("::ffff:192.168.1.1")},
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
	}
	tests := []struct {
		host    string
		wantErr bool
	}{
		{"public.test", false},
		{"rebind.test", true},
		{"mixed.test", true},
		{"mapped.test", true},
		{"metadata.test", true},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			c := New(Options{})
			publicView(c, names)
			_, err := c.Fetch(context.Background(), "http://"+tt.host+":"+port+"/article")
			if tt.wantErr != (err != nil) {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, ErrBlocked) {
				t.Fatalf("err = %v, want ErrBlocked", err)
			}
		})
	}
}

func TestGuardRedirect(t *testing.T) {
	site := testkit.NewSite(t)
	sitePort := mustPort(t, site.URL)
	names := map[string][]netip.Addr{
		"public.test":   {netip.MustParseAddr("203.0.113.7")},
		"internal.test": {netip.MustParseAddr("10.0.0.8")},
	}
	tests := []struct {
		name    string
		target  string
		wantErr bool
	}{
		{"public to public", "http://public.test:" + sitePort + "/article", false},
		{"public to loopback literal", site.URL + "/article", true},
		{"public to name resolving private", "http://internal.test:" + sitePort + "/article", true},
		{"public to mapped loopback", "http://[::ffff:127.0.0.1]:" + sitePort + "/article", true},
		{"public to credentials", "http://u:p@public.test:" + sitePort + "/article", true},
		{"public to file scheme", "file:///etc/passwd", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hop := redirectTo(t, tt.target)
			c := New(Options{})
			publicView(c, names)
			before := site.Hits("/article")
			page, err := c.Fetch(context.Background(), "http://public.test:"+mustPort(t, hop.URL)+"/start")
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				if page.FinalURL != tt.target {
					t.Errorf("FinalURL = %q, want %q", page.FinalURL, tt.target)
				}
				return
			}
			if err == nil {
				t.Fatal("redirect to a refused target was followed")
			}
			if strings.HasPrefix(tt.target, "http") && !errors.Is(err, ErrBlocked) {
				t.Errorf("err = %v, want ErrBlocked", err)
			}
			if site.Hits("/article") != before {
				t.Error("refused redirect target was contacted")
			}
		})
	}
}

func mustPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return u.Port()
}
