package crawl

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// maxPDFPages bounds the page walk; the page lookup is linear in the page
// count, so huge page trees would otherwise cost quadratic time.
const maxPDFPages = 2000

// pdfToText extracts the plain text of a PDF page by page, stopping once
// maxChars runes are collected (more reports that text was left out). The
// title comes from the document information dictionary when present.
func pdfToText(body []byte, maxChars int) (title, text string, more bool, err error) {
	// The parser signals malformed input by panicking in places it does not
	// recover itself; a bad document must not take the server down.
	defer func() {
		if r := recover(); r != nil {
			title, text, more = "", "", false
			err = fmt.Errorf("malformed PDF: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return "", "", false, fmt.Errorf("open: %w", err)
	}
	title = collapseSpaces(r.Trailer().Key("Info").Key("Title").Text())

	pages := r.NumPage()
	if pages <= 0 {
		return "", "", false, errors.New("document has no pages")
	}
	if pages > maxPDFPages {
		pages, more = maxPDFPages, true
	}
	var b strings.Builder
	runes := 0
	for i := 1; i <= pages; i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		pt, perr := p.GetPlainText(nil)
		if perr != nil {
			// One broken page should not hide the rest of the document.
			continue
		}
		pt = tidyPDFText(pt)
		if pt == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(pt)
		runes += utf8.RuneCountInString(pt)
		if runes > maxChars {
			more = more || i < pages
			break
		}
	}
	return title, strings.TrimSpace(b.String()), more, nil
}

// tidyPDFText trims each line and squeezes runs of blank lines, which the
// text operators produce in abundance.
func tidyPDFText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	lines := strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func collapseSpaces(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
