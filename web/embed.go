// Package web holds the built-in browser UI: plain HTML, CSS and ES modules embedded into the binary, so the
// service needs no separate front-end build or server.
package web

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed static
var static embed.FS

// Files returns the UI's assets rooted at the static directory (index.html, app.js, ...).
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// "static" is a constant, valid path: this cannot happen unless the embed directive is removed.
		panic(fmt.Sprintf("web: static assets: %v", err))
	}
	return sub
}
