package crawl

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

// minArticleChars is the extracted text length below which readability is
// assumed to have picked the wrong node (or a fragment) and the whole body
// is converted instead.
const minArticleChars = 200

// toUTF8 decodes body using the BOM, the Content-Type charset or a <meta>
// declaration, in that order, falling back to a UTF-8 validity guess.
func toUTF8(body []byte, contentType string) string {
	enc, _, _ := charset.DetermineEncoding(body, contentType)
	return decodeWith(enc, body)
}

func decodeWith(enc encoding.Encoding, body []byte) string {
	if enc == encoding.Nop {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		// Undecodable input: keep what is valid rather than failing the
		// whole page over a few bad bytes.
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

// decodeText handles text/* and JSON bodies, which are returned verbatim.
func decodeText(body []byte, contentType, media string) string {
	if classify(media) == kindJSON {
		// JSON is UTF-8 unless the server says otherwise; sniffing for
		// <meta> or windows-1252 would only cause mojibake.
		_, params, err := mime.ParseMediaType(contentType)
		if err != nil || params["charset"] == "" {
			return decodeWith(unicode.UTF8BOM, body)
		}
	}
	return strings.TrimSpace(toUTF8(body, contentType))
}

// htmlToMarkdown extracts the main article with readability and converts it
// to markdown, falling back to the whole document when extraction fails or
// yields too little text.
func htmlToMarkdown(ctx context.Context, body []byte, contentType string, pageURL *url.URL) (title, md string, err error) {
	src := toUTF8(body, contentType)

	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return "", "", fmt.Errorf("parse html: %w", err)
	}
	title = documentTitle(doc)

	// ParseDocument works on a clone, leaving doc intact for the fallback.
	// Parse (the reader variant) is avoided on purpose: it re-sniffs the
	// charset of text that is already UTF-8.
	parser := readability.NewParser()
	article, rerr := parser.ParseDocument(doc, pageURL)
	switch {
	case rerr != nil:
		slog.DebugContext(ctx, "crawl: readability failed, converting whole page", "url", pageURL.Redacted(), "err", rerr)
	case article.Node == nil:
		slog.DebugContext(ctx, "crawl: readability found no article, converting whole page", "url", pageURL.Redacted())
	default:
		if t := strings.Join(strings.Fields(article.Title()), " "); t != "" {
			title = t
		}
		var text bytes.Buffer
		if terr := article.RenderText(&text); terr == nil && utf8.RuneCount(bytes.TrimSpace(text.Bytes())) >= minArticleChars {
			md, err = convertNode(ctx, article.Node, pageURL)
			if err != nil {
				return "", "", err
			}
			if md != "" {
				return title, withTitleHeading(title, md), nil
			}
		}
		slog.DebugContext(ctx, "crawl: readability result too short, converting whole page", "url", pageURL.Redacted())
	}

	md, err = convertNode(ctx, doc, pageURL)
	if err != nil {
		return "", "", err
	}
	return title, md, nil
}

// withTitleHeading makes the page title the top heading. Readability either
// drops an <h1> that repeats the title or demotes it to <h2>; both leave the
// document without a proper top heading.
func withTitleHeading(title, md string) string {
	if title == "" || strings.HasPrefix(md, "# ") {
		return md
	}
	first, rest, _ := strings.Cut(md, "\n")
	if text, ok := strings.CutPrefix(first, "## "); ok && strings.TrimSpace(text) == title {
		return "# " + title + "\n" + rest
	}
	return "# " + title + "\n\n" + md
}

func newConverter() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal)),
		strikethrough.NewStrikethroughPlugin(),
	))
}

func convertNode(ctx context.Context, n *html.Node, pageURL *url.URL) (string, error) {
	out, err := newConverter().ConvertNode(n,
		converter.WithContext(ctx),
		converter.WithDomain(pageURL.String()),
	)
	if err != nil {
		return "", fmt.Errorf("html to markdown: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// documentTitle returns the first <title> text, whitespace-collapsed.
func documentTitle(doc *html.Node) string {
	var walk func(*html.Node) string
	walk = func(n *html.Node) string {
		if n.Type == html.ElementNode && n.DataAtom == atom.Svg {
			return "" // <title> inside SVG is a tooltip, not the page title
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			var b strings.Builder
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					b.WriteString(c.Data)
				}
			}
			return strings.Join(strings.Fields(b.String()), " ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if t := walk(c); t != "" {
				return t
			}
		}
		return ""
	}
	return walk(doc)
}
