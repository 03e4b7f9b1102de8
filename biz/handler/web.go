package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/protocol/consts"

	"github.com/deer-go/deer-go/web"
)

// uiCSP keeps the UI to its own origin: no inline script or style, no third-party requests except report images.
const uiCSP = "default-src 'self'; connect-src 'self'; img-src 'self' data: https:; style-src 'self'; " +
	"script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// assetMaxAge is short because asset names are not content-hashed: a new binary must take effect quickly, and the
// ETag makes revalidation cheap.
const assetMaxAge = "public, max-age=300"

var uiTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// uiAsset is one embedded file, read once: the files never change while the binary runs.
type uiAsset struct {
	body        []byte
	contentType string
	etag        string
}

// registerWeb serves the built-in UI: index.html at / and the other files under /static/.
func (h *Handlers) registerWeb(s *server.Hertz) {
	assets, err := loadAssets(web.Files())
	if err != nil {
		// The assets are compiled in; failing to read them is a build defect, not a runtime condition.
		panic(fmt.Sprintf("web ui: %v", err))
	}
	index, ok := assets["index.html"]
	if !ok {
		panic("web ui: index.html is missing from the embedded assets")
	}
	serveIndex := func(_ context.Context, c *app.RequestContext) {
		c.Response.Header.Set("Content-Security-Policy", uiCSP)
		c.Response.Header.Set("Referrer-Policy", "no-referrer")
		c.Response.Header.Set("X-Frame-Options", "DENY")
		writeAsset(c, index, "no-cache")
	}
	serveStatic := func(_ context.Context, c *app.RequestContext) {
		name := strings.TrimPrefix(path.Clean("/"+c.Param("filepath")), "/")
		a, ok := assets[name]
		if !ok || name == "index.html" {
			writeError(c, consts.StatusNotFound, "no asset "+name)
			return
		}
		writeAsset(c, a, assetMaxAge)
	}
	s.GET("/", serveIndex)
	s.HEAD("/", serveIndex)
	s.GET("/static/*filepath", serveStatic)
	s.HEAD("/static/*filepath", serveStatic)
}

func loadAssets(files fs.FS) (map[string]uiAsset, error) {
	assets := map[string]uiAsset{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		ct, ok := uiTypes[path.Ext(p)]
		if !ok {
			return nil // stray files (editor backups, notes) are not served
		}
		body, err := fs.ReadFile(files, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		sum := sha256.Sum256(body)
		assets[p] = uiAsset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk assets: %w", err)
	}
	return assets, nil
}

func writeAsset(c *app.RequestContext, a uiAsset, cacheControl string) {
	c.Response.Header.Set("X-Content-Type-Options", "nosniff")
	c.Response.Header.Set("Cache-Control", cacheControl)
	c.Response.Header.Set("ETag", a.etag)
	if inm := string(c.GetHeader("If-None-Match")); inm != "" && etagMatches(inm, a.etag) {
		c.NotModified()
		return
	}
	c.Data(consts.StatusOK, a.contentType, a.body)
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
