package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/deer-go/deer-go/conf"
	"github.com/deer-go/deer-go/internal/testkit"
)

const chromiumPath = "/usr/bin/chromium"

// pageProbe runs before the UI's own scripts and records what must never happen: uncaught errors, rejected
// promises and Content-Security-Policy violations.
const pageProbe = `window.__problems = [];
addEventListener('error', (e) => { if (!(e.target instanceof HTMLImageElement)) __problems.push('error: ' + (e.message || e.target.outerHTML)); }, true);
addEventListener('unhandledrejection', (e) => __problems.push('unhandled rejection: ' + (e.reason && e.reason.stack || e.reason)));
document.addEventListener('securitypolicyviolation', (e) => __problems.push('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));
window.confirm = () => true;`

// browser is one headless Chromium tab pointed at a test server.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// newBrowser starts Chromium with a fresh profile and a w×h viewport. Without Chromium the test is skipped, except
// in CI, where a missing browser is a broken setup.
func newBrowser(t *testing.T, base string, w, h int64) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser tests need Chromium at %s (apt-get install chromium): %v", chromiumPath, err)
		}
		t.Skipf("browser tests need Chromium at %s (apt-get install chromium); skipping", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(int(w), int(h)),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, base: base}
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first action starts the browser; it must run on a context without a deadline.
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(w, h),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageProbe})
			return err
		}),
	)
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// Registered after the tab exists, so it runs before the tab is closed.
	t.Cleanup(b.screenshotOnFailure)
	return b
}

func (b *browser) screenshotOnFailure() {
	if !b.t.Failed() {
		return
	}
	dir := os.Getenv("DEER_GO_SCREENSHOT_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "deer-go-screenshots")
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name())+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the failed page: %s", path)
}

// do runs steps with a deadline and fails the test with what was being attempted.
func (b *browser) do(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v%s", what, err, b.problems())
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) and decodes its value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %q: %v", expr, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("decode result of %q: %v (%s)", expr, err, raw)
		}
	}
}

func (b *browser) str(expr string) string {
	b.t.Helper()
	var s string
	b.eval(expr, &s)
	return s
}

// wait polls a JavaScript condition until it is truthy.
func (b *browser) wait(what, cond string, timeout time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout+time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
		b.t.Fatalf("waiting for %s (%s): %v%s\npage outline:\n%s", what, cond, err, b.problems(), b.outline())
	}
}

func (b *browser) open(path string) {
	b.t.Helper()
	b.do("open "+path, 15*time.Second, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("#prompt")))
}

// ask types a message into the composer and sends it with Enter.
func (b *browser) ask(text string) {
	b.t.Helper()
	b.do("type "+text, 10*time.Second, chromedp.Click(chromedp.CSS("#prompt")), chromedp.SendKeys(chromedp.CSS("#prompt"), text), pressEnter)
}

// pressEnter is the Enter key as a keyboard sends it: SendKeys("\n") would add a char event that types a newline even
// when the page handles the keydown.
var pressEnter = chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		_, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
		})
		if err != nil {
			return fmt.Errorf("press enter: %w", err)
		}
	}
	return nil
})

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, 10*time.Second, chromedp.Click(chromedp.CSS(sel)))
}

// download clicks a download link and returns the content of the file the browser saved.
func (b *browser) download(sel, name string) string {
	b.t.Helper()
	dir := b.t.TempDir()
	b.do("allow downloads", 5*time.Second, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
		})
		return err
	}))
	b.click(sel)
	path := filepath.Join(dir, name)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if body, err := os.ReadFile(path); err == nil && len(body) > 0 {
			return string(body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	entries, err := os.ReadDir(dir)
	b.t.Fatalf("no download %s after clicking %s (directory holds %v, %v)", name, sel, entries, err)
	return ""
}

// outline lists the timeline's blocks, to tell what the page showed when a wait timed out.
func (b *browser) outline() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#timeline > .blk > *')].map((e) =>
		e.className + ': ' + e.textContent.replace(/\s+/g, ' ').slice(0, 140))`))
	if err != nil {
		return "  (no outline: " + err.Error() + ")"
	}
	return "  " + strings.Join(lines, "\n  ")
}

func (b *browser) problems() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	p, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__problems || []`))
	if err != nil || len(p) == 0 {
		return ""
	}
	return "\npage problems:\n  " + strings.Join(p, "\n  ")
}

// noProblems fails the test when the page threw, rejected a promise or hit the CSP.
func (b *browser) noProblems() {
	b.t.Helper()
	if p := b.problems(); p != "" {
		b.t.Errorf("the page reported problems:%s", p)
	}
}

// jsq quotes s as a JavaScript string literal.
func jsq(s string) string {
	q, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(q)
}

// richReport is a reporter answer with every construct the renderer handles, plus hostile HTML from the web.
func richReport(site string) string {
	return "# Eiffel Tower vs the tallest building\n\n" +
		"The tower is **330 m** tall; the *Burj Khalifa* reaches `828 m`.\n\n" +
		"## Key points\n\n" +
		"- The tower is 330 m ([Article](" + site + "/article)).\n" +
		"- Ratio 2.51.\n  1. nested item\n\n" +
		"| Structure | Height |\n|:---|---:|\n| Eiffel Tower | 330 m |\n| Burj Khalifa | 828 m |\n\n" +
		"> Heights exclude antennas.\n\n" +
		"```python\nprint(828 / 330)\n```\n\n" +
		"Hostile text: <img src=x onerror=\"window.__xss=1\"> <script>window.__xss=2</script> " +
		"[click me](javascript:window.__xss=3) [data](data:text/html,<b>x</b>) <a href=\"javascript:alert(1)\">raw</a>\n"
}

func TestBrowserResearchWithPlanReview(t *testing.T) {
	s := &script{}
	s.plan = func(req *testkit.ChatRequest) string {
		if strings.Contains(string(req.Raw), "also cover wind load") {
			return planJSON("Eiffel Tower with wind load", "research", "processing")
		}
		return planJSON("Eiffel Tower", "research")
	}
	s.override = func(agent string, _ *testkit.ChatRequest) (testkit.Reply, bool) {
		if agent == "reporter" {
			return testkit.Reply{Content: richReport(s.site)}, true
		}
		return testkit.Reply{}, false
	}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	b := newBrowser(t, e.base, 1280, 800)
	b.open("/")

	var paints []struct {
		Name      string  `json:"name"`
		StartTime float64 `json:"startTime"`
	}
	b.eval(`performance.getEntriesByType('paint').map((p) => ({name: p.name, startTime: p.startTime}))`, &paints)
	for _, p := range paints {
		t.Logf("%s: %.0f ms", p.Name, p.StartTime)
	}

	b.ask("How tall is the Eiffel Tower compared with the tallest building?")
	b.wait("the first plan with review buttons", `document.querySelector('.plan:not(.old) [data-act=edit]')`, 15*time.Second)
	if got := b.str(`document.querySelector('.plan:not(.old) .plan-title').textContent`); got != "Eiffel Tower" {
		t.Fatalf("plan title %q", got)
	}
	if got := b.str(`document.querySelector('.turn.user .bubble').textContent`); !strings.Contains(got, "Eiffel Tower compared") {
		t.Fatalf("user bubble %q", got)
	}

	b.click(".plan:not(.old) [data-act=edit]")
	// Edit plan puts the composer in edit mode (focus is not asserted: headless Chromium does not always move it).
	b.wait("edit mode", `!document.getElementById('mode').hidden`, 10*time.Second)
	b.ask("also cover wind load")
	b.wait("the revised plan", `document.querySelector('.plan:not(.old) .plan-title')?.textContent === 'Eiffel Tower with wind load' && document.querySelector('.plan:not(.old) [data-act=accept]')`, 15*time.Second)
	var steps []string
	b.eval(`[...document.querySelectorAll('.plan:not(.old) .step .badge')].map((e) => e.textContent)`, &steps)
	if strings.Join(steps, ",") != "Research,Code" {
		t.Errorf("step badges %v", steps)
	}
	if n := b.str(`String(document.querySelectorAll('.plan.old').length)`); n != "1" {
		t.Errorf("%s superseded plans, want 1", n)
	}

	b.click(".plan:not(.old) [data-act=accept]")
	b.wait("the finished report", `document.querySelector('.report:not(.streaming) [data-dl=md]')`, 20*time.Second)
	b.wait("the run to end", `document.getElementById('send').hidden === false`, 10*time.Second)

	var got struct {
		H1, Status          string
		Done, Searches      int
		H2s                 []string
		Table, Quote, Code  bool
		Links               []struct{ Href, Rel, Target string }
		Dangerous, XSS      any
		Text, Accepted      string
		CodeOut, SearchLink string
	}
	b.eval(`(() => {
		const r = document.querySelector('.report-body');
		return {
			H1: r.querySelector('h1')?.textContent, Status: document.querySelector('.plan:not(.old) .pill')?.textContent,
			Done: document.querySelectorAll('.plan:not(.old) .step.done').length,
			Searches: document.querySelectorAll('.plan:not(.old) .act .links li').length,
			H2s: [...r.querySelectorAll('h2')].map((h) => h.textContent),
			Table: !!r.querySelector('table td.al-r'), Quote: !!r.querySelector('blockquote'), Code: !!r.querySelector('pre code.lang-python'),
			Links: [...r.querySelectorAll('a')].map((a) => ({Href: a.getAttribute('href'), Rel: a.rel, Target: a.target})),
			Dangerous: r.querySelectorAll('img, script, iframe, [onerror], [onclick], a[href^="javascript"], a[href^="data"]').length,
			XSS: window.__xss ?? null, Text: r.textContent,
			Accepted: document.querySelector('.marker.ok')?.textContent,
			CodeOut: document.querySelector('.plan:not(.old) pre.out')?.textContent,
			SearchLink: document.querySelector('.plan:not(.old) .links a')?.getAttribute('href'),
		};
	})()`, &got)
	if got.H1 != "Eiffel Tower vs the tallest building" || !got.Table || !got.Quote || !got.Code {
		t.Errorf("report not rendered: h1=%q table=%v quote=%v code=%v", got.H1, got.Table, got.Quote, got.Code)
	}
	if got.Done != 2 || got.Status != "Completed" {
		t.Errorf("plan after the run: %d steps done, status %q", got.Done, got.Status)
	}
	if got.Searches == 0 || !strings.HasPrefix(got.SearchLink, "https://") || !strings.Contains(got.CodeOut, "2.509") {
		t.Errorf("activities: %d search results (first %q), code output %q", got.Searches, got.SearchLink, got.CodeOut)
	}
	if got.Accepted == "" {
		t.Error("no accept marker in the timeline")
	}
	if len(got.H2s) == 0 || got.H2s[len(got.H2s)-1] != "References" {
		t.Errorf("report headings %v, want a References section last", got.H2s)
	}
	foundArticle := false
	for _, l := range got.Links {
		if !strings.HasPrefix(l.Href, "http://") && !strings.HasPrefix(l.Href, "https://") {
			t.Errorf("link with an unsafe href %q", l.Href)
		}
		if l.Rel != "noopener noreferrer" || l.Target != "_blank" {
			t.Errorf("link %s: rel=%q target=%q", l.Href, l.Rel, l.Target)
		}
		foundArticle = foundArticle || l.Href == e.site.URL+"/article"
	}
	if !foundArticle {
		t.Errorf("no link to the crawled article among %v", got.Links)
	}
	if fmt.Sprint(got.Dangerous) != "0" || got.XSS != nil {
		t.Errorf("hostile HTML became markup: %v dangerous elements, __xss=%v", got.Dangerous, got.XSS)
	}
	if !strings.Contains(got.Text, `<img src=x onerror="window.__xss=1">`) || !strings.Contains(got.Text, "<script>") {
		t.Errorf("hostile HTML should show as text: %q", got.Text)
	}

	// The download links really download: the Markdown report and a standalone page.
	md := b.download("[data-dl=md]", "Eiffel-Tower-with-wind-load.md")
	if !strings.HasPrefix(md, "# Eiffel Tower vs the tallest building") || !strings.Contains(md, "## References") {
		t.Errorf("markdown download (%d bytes): %.200q", len(md), md)
	}
	html := b.download("[data-dl=html]", "Eiffel-Tower-with-wind-load.html")
	if !strings.HasPrefix(html, "<!DOCTYPE html>") || !strings.Contains(html, "<style>") || !strings.Contains(html, "<table>") ||
		strings.Contains(html, "<script") || strings.Contains(html, "<img") {
		t.Errorf("html download: %.400q", html)
	}

	// The thread is in the history and opens from there with the same plan and report.
	b.wait("the thread in the history", `document.querySelector('.th-item.active .th-title')?.textContent === 'Eiffel Tower with wind load'`, 10*time.Second)
	b.click("#new-thread")
	b.wait("an empty composer", `!document.getElementById('welcome').hidden`, 10*time.Second)
	b.click(".th-item .th-link")
	b.wait("the reopened thread", `document.querySelector('.report-body h1') && document.querySelectorAll('.plan:not(.old) .step.done').length === 2 && document.querySelectorAll('.turn.user, .marker.edit').length === 2 && document.querySelector('.marker.ok')`, 10*time.Second)
	b.noProblems()
}

func TestBrowserReloadReattachesToRunningResearch(t *testing.T) {
	s := &script{}
	slow := func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		if agentOf(req) == "researcher" {
			r.ChunkDelay = 120 * time.Millisecond
		}
		return r
	}
	e := newEnv(t, slow)
	s.site = e.site.URL
	if resp, err := http.Get(e.base + "/api/threads"); err != nil || resp.StatusCode == http.StatusNotFound {
		if resp != nil {
			resp.Body.Close()
		}
		t.Skip("the server has no thread API (GET /api/threads); a reloaded page cannot re-attach yet")
	} else {
		resp.Body.Close()
	}
	b := newBrowser(t, e.base, 1280, 800)
	b.open("/")
	b.click("#settings-btn")
	b.click("#s-auto")
	b.ask("How tall is the Eiffel Tower?")
	b.wait("the researcher at work", `document.querySelector('.step.running .acts')`, 15*time.Second)
	url := b.str(`location.href`)
	if !strings.Contains(url, "?thread=") {
		t.Fatalf("the page URL does not name the thread: %s", url)
	}
	b.do("reload", 15*time.Second, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	if b.str(`String(!!document.querySelector('.report-body h1'))`) == "true" {
		t.Fatal("the report was already there right after the reload; the research was too fast to test re-attaching")
	}
	b.wait("the report after the reload", `document.querySelector('.report:not(.streaming) .report-body h1')`, 30*time.Second)
	var after struct {
		User string
		Done int
	}
	b.eval(`({User: document.querySelector('.turn.user .bubble')?.textContent, Done: document.querySelectorAll('.step.done').length})`, &after)
	if after.User != "How tall is the Eiffel Tower?" || after.Done != 2 {
		t.Errorf("after the reload: user turn %q, %d steps done", after.User, after.Done)
	}
	b.noProblems()
}

func TestBrowserStopsRunningResearch(t *testing.T) {
	s := &script{}
	slow := func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		r.ChunkDelay = 150 * time.Millisecond
		return r
	}
	e := newEnv(t, slow)
	s.site = e.site.URL
	b := newBrowser(t, e.base, 1280, 800)
	b.open("/")
	b.click("#settings-btn")
	b.click("#s-auto")
	b.ask("How tall is the Eiffel Tower?")
	b.wait("the researcher at work", `document.querySelector('.step.running .act')`, 15*time.Second)
	b.click("#cancel")
	b.wait("the run to stop", `!document.getElementById('send').hidden && document.querySelector('.marker')?.textContent === 'The research was stopped.'`, 10*time.Second)
	var st struct{ Running, Stopped, Done int }
	b.eval(`({Running: document.querySelectorAll('.step.running').length, Stopped: document.querySelectorAll('.step.stopped').length,
		Done: document.querySelectorAll('.step.done').length})`, &st)
	if st.Running != 0 || st.Stopped != 1 || st.Done != 0 {
		t.Errorf("steps after stopping: %+v", st)
	}
	if b.str(`String(!!document.querySelector('.notice'))`) != "false" {
		t.Error("stopping on purpose should not raise an error notice")
	}
	b.noProblems()
}

func TestBrowserShowsErrors(t *testing.T) {
	cases := []struct {
		name   string
		opts   []envOption
		before func(b *browser)
		want   []string // parts of the notice
		marker bool     // the run failed, so the timeline says so too
	}{
		{
			name: "request rejected",
			before: func(b *browser) {
				b.click("#settings-btn")
				b.do("set max steps", 5*time.Second, chromedp.SetValue(chromedp.CSS("#s-steps"), ""), chromedp.SendKeys(chromedp.CSS("#s-steps"), "1000"))
			},
			want: []string{"The server did not accept the request", "max_step_num"},
		},
		{
			name: "unreachable model",
			opts: []envOption{func(c *conf.Config) {
				c.LLM.Basic.BaseURL = "http://" + closedPort(t) + "/v1"
				c.LLM.MaxRetries = 1
			}},
			want:   []string{"The research stopped with an error", "LLM_BASE_URL"},
			marker: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{}
			e := newEnv(t, s.respond, tc.opts...)
			s.site = e.site.URL
			b := newBrowser(t, e.base, 1280, 800)
			b.open("/")
			if tc.before != nil {
				tc.before(b)
			}
			b.ask("How tall is the Eiffel Tower?")
			b.wait("an error notice", `document.querySelector('.notice .msg')`, 15*time.Second)
			msg := b.str(`document.querySelector('.notice .msg').textContent`)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("notice %q lacks %q", msg, w)
				}
			}
			if vis := b.str(`String(document.querySelector('.notice').getBoundingClientRect().height > 0)`); vis != "true" {
				t.Error("the notice is not visible")
			}
			if tc.marker {
				b.wait("the failed run marked in the timeline", `document.querySelector('.marker.bad')?.textContent.includes('LLM_BASE_URL')`, 10*time.Second)
			} else if b.str(`document.getElementById('prompt').value`) != "How tall is the Eiffel Tower?" {
				t.Error("the rejected question was not put back into the composer")
			}
			b.click(".notice button")
			b.wait("the notice dismissed", `!document.querySelector('.notice')`, 10*time.Second)
			b.noProblems()
		})
	}
}

func TestBrowserPhoneWidth(t *testing.T) {
	s := &script{}
	s.override = func(agent string, _ *testkit.ChatRequest) (testkit.Reply, bool) {
		if agent == "reporter" {
			return testkit.Reply{Content: richReport(s.site) + "\nA-very-long-unbroken-token-" + strings.Repeat("x", 120) + "\n"}, true
		}
		return testkit.Reply{}, false
	}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	b := newBrowser(t, e.base, 390, 844)
	b.do("phone viewport", 5*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2)))
	b.open("/")
	if v := b.str(`getComputedStyle(document.getElementById('sidebar')).visibility`); v != "hidden" {
		t.Errorf("the sidebar is %s at phone width, want a closed drawer", v)
	}
	b.click("#settings-btn")
	b.click("#s-auto")
	b.click("#settings-close")
	b.ask("How tall is the Eiffel Tower?")
	b.wait("the report", `document.querySelector('.report:not(.streaming) .report-body h1')`, 20*time.Second)
	var overflow []string
	b.eval(`(() => {
		const out = [], w = document.documentElement.clientWidth;
		if (document.documentElement.scrollWidth > w) out.push('document ' + document.documentElement.scrollWidth + ' > ' + w);
		const sc = document.getElementById('scroller');
		if (sc.scrollWidth > sc.clientWidth) out.push('timeline ' + sc.scrollWidth + ' > ' + sc.clientWidth);
		for (const el of document.querySelectorAll('.card, .turn, .dock, .composer')) {
			const r = el.getBoundingClientRect();
			if (r.right > w + 0.5 || r.left < -0.5) out.push(el.className + ' spans ' + r.left + '..' + r.right);
		}
		return out;
	})()`, &overflow)
	if len(overflow) > 0 {
		t.Errorf("horizontal overflow at 390 px: %v", overflow)
	}
	b.click("#open-drawer")
	b.wait("the drawer", `getComputedStyle(document.getElementById('sidebar')).visibility === 'visible' && document.querySelector('.th-item')`, 10*time.Second)
	// Tap the dimmed page beside the drawer, as a user would.
	b.do("tap beside the drawer", 5*time.Second, chromedp.MouseClickXY(375, 420))
	b.wait("the drawer closed", `getComputedStyle(document.getElementById('sidebar')).visibility === 'hidden' && document.getElementById('scrim').hidden`, 10*time.Second)
	b.noProblems()
}

// TestBrowserClientParsers checks the UI's SSE parser and markdown renderer in the browser, on inputs a server or a
// web page could send.
func TestBrowserClientParsers(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	b := newBrowser(t, e.base, 800, 600)
	b.open("/")

	sseCases := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"LF framing with ids", []string{"id: 1\nevent: message_chunk\ndata: {\"a\":1}\n\n"}, `[{"id":"1","event":"message_chunk","data":"{\"a\":1}"}]`},
		{"CRLF split across chunks", []string{"event: x\r", "\ndata: 1\r\n\r", "\n"}, `[{"id":"","event":"x","data":"1"}]`},
		{"comments and keep-alives", []string{": keep-alive\n\n", "data: 2\n", "\n"}, `[{"id":"","event":"message","data":"2"}]`},
		{"multi-line data, no space", []string{"data:a\ndata: b\n\n"}, `[{"id":"","event":"message","data":"a\nb"}]`},
		{"id sticks, unterminated tail dropped", []string{"id: 7\ndata: x\n\ndata: y\n\ndata: z"}, `[{"id":"7","event":"message","data":"x"},{"id":"7","event":"message","data":"y"}]`},
		{"one byte at a time", strings.Split("event: e\ndata: {\"k\":\"v\"}\n\n", ""), `[{"id":"","event":"e","data":"{\"k\":\"v\"}"}]`},
	}
	for _, tc := range sseCases {
		t.Run("sse/"+tc.name, func(t *testing.T) {
			chunks, err := json.Marshal(tc.chunks)
			if err != nil {
				t.Fatal(err)
			}
			got := b.str(`import('/static/sse.js').then((m) => {
				const out = [], p = m.createParser((e) => out.push(e));
				for (const c of ` + string(chunks) + `) p.push(c);
				p.end();
				return JSON.stringify(out);
			})`)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}

	mdCases := []struct {
		name, src string
		want      []string // substrings of the HTML
		deny      *regexp.Regexp
	}{
		{"script tag", "<script>alert(1)</script>", []string{"&lt;script&gt;"}, regexp.MustCompile(`<script`)},
		{"event handler", `<img src=x onerror=alert(1)>`, []string{"&lt;img"}, regexp.MustCompile(`<img`)},
		{"javascript link", "[x](javascript:alert(1)) [y](JaVaScRiPt:alert(1)) [z]( java\tscript:alert(1))", []string{"x", "y"}, regexp.MustCompile(`href`)},
		{"quote breakout", `[x](https://a.example/"onmouseover="alert(1))`, []string{`href="https://a.example/&quot;onmouseover=&quot;alert(1)"`}, regexp.MustCompile(`" onmouseover|"onmouseover`)},
		{"autolink", "see https://example.com/a_b_c. and <https://x.example/?a=1&b=2>", []string{`href="https://example.com/a_b_c"`, `href="https://x.example/?a=1&amp;b=2"`}, regexp.MustCompile(`<em>`)},
		{"image over http refused", "![alt](http://x.example/i.png) ![ok](https://x.example/i.png)", []string{`src="https://x.example/i.png"`}, regexp.MustCompile(`src="http:`)},
		{"code keeps markup literal", "`<b>` and\n```\n<i>x</i>\n```", []string{"<code>&lt;b&gt;</code>", "&lt;i&gt;x&lt;/i&gt;"}, regexp.MustCompile(`<b>|<i>`)},
		{"lists and emphasis", "1. **one**\n2. *two*\n   - sub\n3. three", []string{"<ol><li><strong>one</strong></li>", "<em>two</em>", "<ul><li>sub</li></ul>"}, nil},
		{"table alignment", "|a|b|c|\n|:-|:-:|-:|\n|1|2|3|", []string{`<th class="al-c">b</th>`, `<td class="al-r">3</td>`}, nil},
		{"link with parens", "[w](https://en.wikipedia.org/wiki/Tower_(disambiguation))", []string{`href="https://en.wikipedia.org/wiki/Tower_(disambiguation)"`}, nil},
	}
	for _, tc := range mdCases {
		t.Run("markdown/"+tc.name, func(t *testing.T) {
			got := b.str(`import('/static/md.js').then((m) => m.renderMarkdown(` + jsq(tc.src) + `))`)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("html lacks %q:\n%s", w, got)
				}
			}
			if tc.deny != nil && tc.deny.MatchString(got) {
				t.Errorf("html matches %s:\n%s", tc.deny, got)
			}
		})
	}

	// Plans stream in as partial JSON; every prefix must parse to something sensible or nothing, never throw.
	var prefixes struct {
		Titles []string
		Steps  int
	}
	b.eval(`import('/static/thread.js').then((m) => {
		const src = 'Here is the plan:\n`+"```json"+`\n' + JSON.stringify({title: 'T', thought: 'why', steps: [{title: 'S1', description: 'd"1'}, {title: 'S2'}]}, null, 1) + '\n`+"```"+`';
		const titles = new Set();
		let steps = 0;
		for (let i = 0; i <= src.length; i++) {
			const p = m.parseLoose(src.slice(0, i));
			if (p && p.title) titles.add(p.title);
			if (p && Array.isArray(p.steps)) steps = Math.max(steps, p.steps.length);
		}
		return {Titles: [...titles], Steps: steps};
	})`, &prefixes)
	if strings.Join(prefixes.Titles, ",") != "T" || prefixes.Steps != 2 {
		t.Errorf("partial plan parsing: titles %v, max steps %d", prefixes.Titles, prefixes.Steps)
	}
	b.noProblems()
}

// TestWebUIHeaders checks how the UI is served: types, caching, CSP, and that the API keeps its JSON 404s.
func TestWebUIHeaders(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	get := func(method, path string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, e.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	cases := []struct {
		method, path string
		status       int
		ctype, cache string
		body         string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", "no-cache", `<script type="module" src="/static/app.js">`},
		{"HEAD", "/", 200, "text/html; charset=utf-8", "no-cache", ""},
		{"GET", "/static/app.js", 200, "text/javascript; charset=utf-8", "public, max-age=300", "import"},
		{"GET", "/static/app.css", 200, "text/css; charset=utf-8", "public, max-age=300", ":root"},
		{"GET", "/static/favicon.svg", 200, "image/svg+xml", "public, max-age=300", "<svg"},
		{"GET", "/static/../go.mod", 404, "application/json; charset=utf-8", "", `"detail"`},
		{"GET", "/static/missing.js", 404, "application/json; charset=utf-8", "", `"detail"`},
		{"GET", "/api/nothing-here", 404, "application/json; charset=utf-8", "", `"detail"`},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := get(tc.method, tc.path, nil)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.ctype || resp.Header.Get("Cache-Control") != tc.cache {
				t.Fatalf("status %d type %q cache %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("body lacks %q: %.200q", tc.body, body)
			}
			if tc.status == 200 && resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
		})
	}
	resp, index := get("GET", "/", nil)
	csp := resp.Header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'self'", "connect-src 'self'", "img-src 'self' data: https:", "style-src 'self'", "script-src 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP allows unsafe sources: %q", csp)
	}
	if m := regexp.MustCompile(`<script(?:\s+type="module")?>|\sstyle=|\son[a-z]+=`).FindString(index); m != "" {
		t.Errorf("index.html has inline script or style: %q", m)
	}
	etag := resp.Header.Get("ETag")
	if r, _ := get("GET", "/", map[string]string{"If-None-Match": etag}); etag == "" || r.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation with ETag %q gave %d", etag, r.StatusCode)
	}
	// No external requests: every asset refers only to its own origin.
	var total int
	for _, f := range []string{"index.html", "app.js", "app.css", "i18n.js", "md.js", "sse.js", "thread.js", "api.js", "favicon.svg"} {
		r, body := get("GET", "/static/"+f, nil)
		if f == "index.html" {
			body = index
		} else if r.StatusCode != 200 {
			t.Errorf("%s: status %d", f, r.StatusCode)
		}
		total += len(body)
		if m := regexp.MustCompile(`(?:src|href)="https?:|url\(\s*['"]?https?:|@import|fetch\(\s*['"]https?:`).FindString(body); m != "" {
			t.Errorf("%s refers to another origin: %q", f, m)
		}
	}
	t.Logf("UI bundle: %d bytes uncompressed", total)
}

// TestBrowserScreenshots writes docs/screenshot-desktop.png and docs/screenshot-phone.png. It runs only when
// DEER_GO_SCREENSHOTS names the output directory (relative to the repository root), e.g. DEER_GO_SCREENSHOTS=docs.
func TestBrowserScreenshots(t *testing.T) {
	dir := os.Getenv("DEER_GO_SCREENSHOTS")
	if dir == "" {
		t.Skip("set DEER_GO_SCREENSHOTS=docs to refresh the screenshots in docs/")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		t.Run(v.name, func(t *testing.T) {
			s := demoScript()
			e := newEnv(t, s.respond)
			s.site = e.site.URL
			b := newBrowser(t, e.base, v.w, v.h)
			if v.name == "phone" {
				b.do("phone viewport", 5*time.Second, chromedp.EmulateViewport(v.w, v.h, chromedp.EmulateMobile, chromedp.EmulateTouch))
			}
			b.open("/")
			// An earlier research, so the history is not empty.
			b.eval(`fetch('/api/chat/stream', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({thread_id: 'earlier', auto_accepted_plan: true,
				messages: [{role: 'user', content: 'Carbon capture costs'}]})}).then((r) => r.text()).then(() => true)`, nil)
			b.ask("How do solid-state batteries compare with lithium-ion cells today?")
			b.wait("the plan", `document.querySelector('[data-act=accept]')`, 15*time.Second)
			b.click("[data-act=accept]")
			b.wait("the report", `document.querySelector('.report:not(.streaming) [data-dl=md]')`, 20*time.Second)
			b.wait("the history", `document.querySelectorAll('.th-item').length === 2`, 10*time.Second)
			// Show the end of the plan and the start of the report together.
			b.eval(`(() => {
				const sc = document.getElementById('scroller'), plan = document.querySelector('.plan:not(.old)'), rep = document.querySelector('.report');
				const top = (el) => el.getBoundingClientRect().top - sc.getBoundingClientRect().top + sc.scrollTop;
				sc.scrollTop = innerWidth < 600 ? top(rep) - 330 : top(plan) - 16;
				return true;
			})()`, nil)
			b.do("settle", 2*time.Second, chromedp.Sleep(300*time.Millisecond))
			ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
			defer cancel()
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "screenshot-"+v.name+".png")
			if err := os.WriteFile(out, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", out)
			b.noProblems()
		})
	}
}

// demoScript is a research that reads like a real one, for the screenshots.
func demoScript() *script {
	s := &script{}
	s.plan = func(req *testkit.ChatRequest) string {
		if strings.Contains(string(req.Raw), "Carbon capture") {
			return planJSON("Carbon capture: methods and costs", "research")
		}
		return `{"locale":"en-US","has_enough_context":false,"title":"Solid-state vs lithium-ion batteries in 2026",
"thought":"Compare energy density, safety, cost and production readiness using recent industry and academic sources.",
"steps":[{"id":"s1","need_search":true,"step_type":"research","title":"Collect current performance figures","description":"Energy density, cycle life and charging speed of commercial and pilot solid-state cells versus lithium-ion."},
{"id":"s2","need_search":true,"step_type":"research","title":"Survey manufacturing readiness","description":"Announced production lines, yields and cost per kWh from manufacturers and analysts."},
{"id":"s3","need_search":false,"step_type":"processing","title":"Compute the cost gap","description":"Estimate the price difference per kWh from the collected figures.","depends_on":["s2"]}]}`
	}
	s.override = func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool) {
		switch agent {
		case "researcher":
			switch len(req.ToolResults()) {
			case 0:
				return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("web_search", map[string]string{"query": "solid-state battery energy density 2026"})}}, true
			case 1:
				return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("crawl_tool", map[string]string{"url": s.site + "/article"})}}, true
			}
			return testkit.Reply{Content: "Solid-state pilot cells reach 350–450 Wh/kg against 250–300 Wh/kg for the best lithium-ion cells."}, true
		case "coder":
			if len(req.ToolResults()) == 0 {
				return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("python_repl_tool", map[string]string{"code": "li_ion, solid = 115, 400\nprint(f'gap: {solid / li_ion:.1f}x per kWh')"})}}, true
			}
			return testkit.Reply{Content: "Solid-state cells cost about 3.5 times as much per kWh today."}, true
		case "reporter":
			return testkit.Reply{Content: "# Solid-state vs lithium-ion batteries in 2026\n\n" +
				"Solid-state batteries replace the liquid electrolyte with a solid one. Pilot cells now store **40–60% more energy** per kilogram, " +
				"but they cost several times more and volume production is only starting ([How Solid-State Batteries Work](" + s.site + "/article)).\n\n" +
				"## Key findings\n\n" +
				"- **Energy density:** 350–450 Wh/kg for pilot solid-state cells, 250–300 Wh/kg for lithium-ion.\n" +
				"- **Safety:** no flammable liquid electrolyte, so thermal runaway is far less likely.\n" +
				"- **Cost:** about *3.5×* the price per kWh of lithium-ion in 2026.\n\n" +
				"## Comparison\n\n" +
				"| Metric | Lithium-ion | Solid-state (pilot) |\n|:---|---:|---:|\n| Energy density | 250–300 Wh/kg | 350–450 Wh/kg |\n| Cost per kWh | ~$115 | ~$400 |\n| Fast charge 10–80% | 20–30 min | 10–15 min |\n\n" +
				"> Figures for solid-state cells come from pilot lines and may change as production scales.\n\n" +
				"## Outlook\n\nExpect premium vehicles first, around 2027–2028, with costs falling as yields improve.\n"}, true
		}
		return testkit.Reply{}, false
	}
	return s
}
