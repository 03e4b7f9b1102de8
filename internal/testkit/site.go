package testkit

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// Fixed facts about the pages NewSite serves, for assertions in tests.
const (
	SiteArticleTitle  = "How Solid-State Batteries Work"
	SiteArticle2Title = "A Short History of the Lighthouse"
	// SiteSlowDelay is how long /slow stalls before answering.
	SiteSlowDelay = 5 * time.Second
	// SiteLargeBytes is the minimum size of /large, above the crawler's
	// default 5 MiB body cap.
	SiteLargeBytes = 6 << 20
)

type sitePage struct {
	contentType string
	body        []byte
}

// Site is a small static web site on loopback with realistic pages:
//
//	/article, /article2    articles wrapped in nav, sidebar and footer clutter
//	/latin1                ISO-8859-1 page, charset in the Content-Type header
//	/gbk                   GBK page, charset only in a <meta> tag
//	/plain.txt, /data.json text and JSON documents
//	/redirect              302 to /article
//	/redirect-chain/N      N redirects, ending at /article
//	/slow                  stalls SiteSlowDelay, gives up when the client leaves
//	/large                 HTML page of at least SiteLargeBytes
//	/image.png             a PNG image
//
// Any other path is a 404. Hits are counted per path, including 404s.
type Site struct {
	URL string

	srv   *httptest.Server
	mu    sync.Mutex
	pages map[string]sitePage
	hits  map[string]int
}

// NewSite starts the site; it is shut down when t finishes.
func NewSite(t testing.TB) *Site {
	t.Helper()
	s := &Site{pages: make(map[string]sitePage), hits: make(map[string]int)}
	if err := s.addDefaults(); err != nil {
		t.Fatalf("testkit: build site pages: %v", err)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Add serves body at path with the given Content-Type, replacing any page
// (including the built-in ones) at that path. An empty contentType sends no
// Content-Type header, so clients have to sniff.
func (s *Site) Add(path, contentType, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = sitePage{contentType: contentType, body: []byte(body)}
}

// Hits reports how many requests reached path.
func (s *Site) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	p, ok := s.pages[r.URL.Path]
	s.mu.Unlock()

	if ok {
		if p.contentType != "" {
			w.Header().Set("Content-Type", p.contentType)
		} else {
			// Stop net/http from sniffing on our behalf.
			w.Header()["Content-Type"] = nil
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(p.body)))
		if _, err := w.Write(p.body); err != nil {
			return // client went away; nothing to report to
		}
		return
	}

	switch {
	case r.URL.Path == "/redirect":
		http.Redirect(w, r, "/article", http.StatusFound)
	case strings.HasPrefix(r.URL.Path, "/redirect-chain/"):
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/redirect-chain/"))
		switch {
		case err != nil || n < 0:
			http.NotFound(w, r)
		case n == 0:
			http.Redirect(w, r, "/article", http.StatusFound)
		default:
			http.Redirect(w, r, "/redirect-chain/"+strconv.Itoa(n-1), http.StatusFound)
		}
	case r.URL.Path == "/slow":
		timer := time.NewTimer(SiteSlowDelay)
		defer timer.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-timer.C:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if _, err := fmt.Fprint(w, "<html><head><title>Slow</title></head><body><p>Finally here.</p></body></html>"); err != nil {
			return
		}
	default:
		http.NotFound(w, r)
	}
}

func (s *Site) addDefaults() error {
	s.pages["/article"] = sitePage{"text/html; charset=utf-8", []byte(articlePage)}
	s.pages["/article2"] = sitePage{"text/html; charset=utf-8", []byte(article2Page)}
	s.pages["/plain.txt"] = sitePage{"text/plain; charset=utf-8", []byte(plainText)}
	s.pages["/data.json"] = sitePage{"application/json", []byte(`{"name":"deer-go","tags":["research","crawl"],"note":"naïve café"}`)}

	latin1, err := charmap.ISO8859_1.NewEncoder().String(latin1Page)
	if err != nil {
		return fmt.Errorf("encode latin1 page: %w", err)
	}
	s.pages["/latin1"] = sitePage{"text/html; charset=ISO-8859-1", []byte(latin1)}

	gbk, err := simplifiedchinese.GBK.NewEncoder().String(gbkPage)
	if err != nil {
		return fmt.Errorf("encode gbk page: %w", err)
	}
	s.pages["/gbk"] = sitePage{"text/html", []byte(gbk)}

	s.pages["/large"] = sitePage{"text/html; charset=utf-8", largePage()}

	img, err := pngImage()
	if err != nil {
		return err
	}
	s.pages["/image.png"] = sitePage{"image/png", img}
	return nil
}

func pngImage() ([]byte, error) {
	m := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := range 4 {
		for y := range 4 {
			m.Set(x, y, color.RGBA{R: uint8(x * 60), G: uint8(y * 60), B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}

func largePage() []byte {
	const para = "<p>This paragraph is filler for a very large page. It exists so that body size limits can be exercised without a real download. Line numbers follow.</p>\n"
	var b bytes.Buffer
	b.Grow(SiteLargeBytes + 1024)
	b.WriteString("<!doctype html><html><head><title>Large Page</title></head><body><article><h1>Large Page</h1>\n")
	for i := 0; b.Len() < SiteLargeBytes; i++ {
		fmt.Fprintf(&b, "<h2>Section %d</h2>\n", i)
		for range 20 {
			b.WriteString(para)
		}
	}
	b.WriteString("<p>THE END OF THE LARGE PAGE</p></article></body></html>\n")
	return b.Bytes()
}

const siteChromeTop = `<header class="site-header">
  <div class="logo"><a href="/">Tech Notes Daily</a></div>
  <nav class="main-nav" role="navigation">
    <ul>
      <li><a href="/">Home</a></li><li><a href="/energy">Energy</a></li><li><a href="/space">Space</a></li>
      <li><a href="/computing">Computing</a></li><li><a href="/about">About</a></li><li><a href="/subscribe">Subscribe</a></li>
    </ul>
  </nav>
  <div class="cookie-banner">We use cookies to improve your experience. <a href="/privacy">Privacy policy</a> <button>Accept all</button></div>
</header>`

const siteChromeBottom = `<aside class="sidebar">
  <h3>Trending</h3>
  <ul>
    <li><a href="/t/1">Ten gadgets you need this summer</a></li>
    <li><a href="/t/2">Why everyone is talking about quantum</a></li>
    <li><a href="/t/3">Sponsored: upgrade your home office</a></li>
  </ul>
  <div class="ad">Advertisement</div>
</aside>
<footer class="site-footer">
  <p>&copy; 2024 Tech Notes Daily. All rights reserved.</p>
  <ul><li><a href="/terms">Terms</a></li><li><a href="/privacy">Privacy</a></li><li><a href="/contact">Contact</a></li></ul>
  <form class="newsletter"><input type="email" placeholder="Your email"><button>Sign up</button></form>
</footer>`

const articlePage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>` + SiteArticleTitle + ` | Tech Notes Daily</title>
<meta name="description" content="An explainer on solid-state battery chemistry.">
<script>window.analytics = {track: function(){}};</script>
<style>body { font-family: sans-serif; }</style>
</head>
<body>
` + siteChromeTop + `
<main>
<article class="post">
  <h1>` + SiteArticleTitle + `</h1>
  <p class="byline">By Dana Whitfield, March 3, 2024</p>
  <p>Solid-state batteries replace the liquid electrolyte found in today's lithium-ion cells with a solid material.
  That single change promises higher energy density, faster charging and far less risk of fire, which is why carmakers
  and electronics companies are investing heavily in the technology. This explainer walks through how the cells work,
  where the engineering challenges lie and what the current prototypes can do.</p>
  <h2>The electrolyte problem</h2>
  <p>In a conventional cell, lithium ions shuttle between the anode and cathode through a flammable organic liquid.
  The liquid works well at room temperature but degrades at high voltage and can ignite when the cell is damaged.
  A solid electrolyte such as a sulfide glass or a ceramic oxide conducts ions while staying chemically stable, as
  described in the <a href="https://example.org/reviews/solid-electrolytes">2023 review of solid electrolytes</a>.</p>
  <h2>Key advantages</h2>
  <ul>
    <li>Higher energy density thanks to lithium-metal anodes</li>
    <li>Lower fire risk because nothing flammable can leak</li>
    <li>Potentially faster charging at moderate temperatures</li>
  </ul>
  <h2>Comparison with lithium-ion</h2>
  <p>The table below summarises typical figures reported by manufacturers for prototype and production cells.</p>
  <table>
    <thead><tr><th>Property</th><th>Lithium-ion</th><th>Solid-state</th></tr></thead>
    <tbody>
      <tr><td>Energy density (Wh/kg)</td><td>250</td><td>400</td></tr>
      <tr><td>Charge time to 80%</td><td>30 min</td><td>15 min</td></tr>
      <tr><td>Electrolyte</td><td>Liquid</td><td>Ceramic</td></tr>
    </tbody>
  </table>
  <h3>Manufacturing hurdles</h3>
  <p>Producing thin, defect-free solid electrolyte layers at scale remains difficult. Tiny cracks let lithium
  filaments called dendrites grow through the separator and short the cell. Researchers at several universities,
  including the team behind <a href="/research/dendrites">our dendrite coverage</a>, are testing pressure-based
  designs that keep the layers in tight contact throughout thousands of charge cycles.</p>
  <p>Most analysts expect the first mass-market vehicles with solid-state packs before the end of the decade,
  although early batches will likely be expensive and reserved for premium models.</p>
</article>
</main>
` + siteChromeBottom + `
</body>
</html>
`

const article2Page = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>` + SiteArticle2Title + `</title></head>
<body>
` + siteChromeTop + `
<div id="content">
<article>
  <h1>` + SiteArticle2Title + `</h1>
  <p>The Pharos of Alexandria, completed around 280 BC, is the most famous ancient lighthouse. Standing well over
  one hundred metres tall, it guided sailors into the busy harbour for centuries before earthquakes brought it down.
  Its design influenced towers across the Mediterranean for more than a thousand years.</p>
  <h2>From fires to lenses</h2>
  <p>Early lighthouses burned wood or coal in open braziers. In 1822 Augustin Fresnel introduced a compound lens
  that concentrated light into a powerful beam visible more than twenty nautical miles away. Read more in
  <a href="https://example.org/fresnel">the Fresnel lens article</a>.</p>
  <ol>
    <li>Open fires on hilltops</li>
    <li>Oil lamps with reflectors</li>
    <li>Fresnel lenses</li>
    <li>Automated electric lights</li>
  </ol>
  <p>Today nearly every lighthouse is automated, and many have been converted into museums or guest houses that
  preserve the keepers' history for visitors.</p>
</article>
</div>
` + siteChromeBottom + `
</body>
</html>
`

const latin1Page = `<!DOCTYPE html>
<html lang="fr">
<head><title>Café crème à Paris</title></head>
<body>
<article>
<h1>Café crème à Paris</h1>
<p>Le café crème est une boisson très appréciée à Paris. Dans les brasseries, on le sert souvent avec un croissant
au beurre, et les habitués le dégustent en terrasse même en hiver. Cette page est encodée en ISO-8859-1 afin de
vérifier que le décodage des caractères accentués fonctionne : é, è, à, ç, ô, ü, ñ, Å.</p>
<p>Les prix varient d'un quartier à l'autre ; près des monuments, il faut compter davantage qu'en périphérie,
où les cafés de quartier gardent une clientèle fidèle et des tarifs raisonnables pour tout le monde.</p>
</article>
</body>
</html>
`

const gbkPage = `<!DOCTYPE html>
<html lang="zh-CN">
<head><meta http-equiv="Content-Type" content="text/html; charset=gbk"><title>深度研究简介</title></head>
<body>
<article>
<h1>深度研究简介</h1>
<p>深度研究是一种结合搜索引擎、网页抓取和大型语言模型的方法，用于自动完成复杂的调研任务。系统首先制定研究计划，
然后分步骤收集资料，最后整理成结构清晰的报告。本页面使用 GBK 编码，用于测试字符集解码是否正确。</p>
<p>在实际应用中，研究人员可以根据需要调整计划的步骤数量和搜索范围，从而在速度和深度之间取得平衡。
报告通常包含关键发现、详细分析以及引用的参考资料列表，方便读者进一步核实信息的来源。</p>
</article>
</body>
</html>
`

const plainText = `Plain text notes
================

These notes are served as text/plain so crawlers return them unchanged.
`
