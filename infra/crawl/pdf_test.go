package crawl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deer-go/deer-go/internal/testkit"
)

// buildPDF writes a minimal but valid PDF: one Helvetica font, one content
// stream per page with each line shown by Tj/T*, an Info title and a correct
// cross-reference table.
func buildPDF(title string, pages ...[]string) []byte {
	esc := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"", // page tree, filled in below
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Title (%s) /Producer (deer-go tests) >>", esc.Replace(title)),
	}
	var kids []string
	for _, lines := range pages {
		pageNum, contentNum := len(objs)+1, len(objs)+2
		kids = append(kids, fmt.Sprintf("%d 0 R", pageNum))
		var s strings.Builder
		s.WriteString("BT\n/F1 12 Tf\n14 TL\n72 720 Td\n")
		for i, l := range lines {
			if i > 0 {
				s.WriteString("T*\n")
			}
			fmt.Fprintf(&s, "(%s) Tj\n", esc.Replace(l))
		}
		s.WriteString("ET")
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", contentNum),
			fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", s.Len(), s.String()))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages))

	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

var reportPDF = buildPDF("Quarterly Battery Report (Q2)",
	[]string{"Solid-state cells reached 400 Wh/kg.", "Costs fell by 12 percent."},
	[]string{"Page two: outlook (2025) and risks."},
)

func TestFetchPDF(t *testing.T) {
	site := testkit.NewSite(t)
	site.Add("/report.pdf", "application/pdf", string(reportPDF))
	site.Add("/sniffed", "", string(reportPDF))
	site.Add("/octet", "application/octet-stream", string(reportPDF))
	site.Add("/broken.pdf", "application/pdf", "%PDF-1.7")
	site.Add("/garbage.pdf", "application/pdf", "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\nstartxref\n7\n%%EOF\n")

	tests := []struct {
		name      string
		path      string
		opts      Options
		want      []string
		notWant   []string
		truncated bool
		wantErr   error
	}{
		{name: "served as pdf", path: "/report.pdf",
			want: []string{"Solid-state cells reached 400 Wh/kg.\nCosts fell by 12 percent.", "Page two: outlook (2025) and risks."}},
		{name: "sniffed without content type", path: "/sniffed", want: []string{"400 Wh/kg"}},
		{name: "sniffed behind octet-stream", path: "/octet", want: []string{"Page two"}},
		{name: "char cap stops after the first page", path: "/report.pdf", opts: Options{MaxContentChars: 40},
			want: []string{"Solid-state"}, notWant: []string{"Page two"}, truncated: true},
		{name: "larger than MaxBytes", path: "/report.pdf", opts: Options{MaxBytes: 300}, wantErr: ErrTooLarge},
		{name: "broken", path: "/broken.pdf", wantErr: ErrInvalidPDF},
		{name: "garbage xref", path: "/garbage.pdf", wantErr: ErrInvalidPDF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.AllowPrivate = true
			page, err := New(tt.opts).Fetch(context.Background(), site.URL+tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if page.ContentType != "application/pdf" || page.Title != "Quarterly Battery Report (Q2)" {
				t.Errorf("type %q title %q", page.ContentType, page.Title)
			}
			for _, w := range tt.want {
				if !strings.Contains(page.Markdown, w) {
					t.Errorf("markdown lacks %q:\n%s", w, page.Markdown)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(page.Markdown, w) {
					t.Errorf("markdown has %q:\n%s", w, page.Markdown)
				}
			}
			if page.Truncated != tt.truncated {
				t.Errorf("Truncated = %v, want %v", page.Truncated, tt.truncated)
			}
		})
	}
}

// TestFetchPDFChunked covers a PDF without Content-Length, where only the
// read cap can notice that it is too large.
func TestFetchPDFChunked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		rc := http.NewResponseController(w)
		for rest := reportPDF; len(rest) > 0; {
			n := min(100, len(rest))
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			rest = rest[n:]
		}
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		max     int64
		wantErr error
	}{
		{max: 300, wantErr: ErrTooLarge},
		{max: int64(len(reportPDF))},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			page, err := New(Options{AllowPrivate: true, MaxBytes: tt.max}).Fetch(context.Background(), srv.URL)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !strings.Contains(page.Markdown, "Page two") {
				t.Errorf("markdown = %q", page.Markdown)
			}
		})
	}
}

func FuzzPDFToText(f *testing.F) {
	f.Add(reportPDF)
	f.Add(buildPDF("", []string{}))
	f.Add([]byte("%PDF-1.4\n%%EOF"))
	f.Add(reportPDF[:len(reportPDF)/2])
	f.Add(bytes.Replace(reportPDF, []byte("/Count 2"), []byte("/Count 99999999"), 1))
	f.Add(bytes.Replace(reportPDF, []byte("Tj"), []byte("TJ"), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, text, _, err := pdfToText(data, 1000)
		if err != nil && text != "" {
			t.Errorf("text %q returned with error %v", text, err)
		}
	})
}
