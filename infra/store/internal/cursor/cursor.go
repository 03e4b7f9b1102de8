// Package cursor encodes the position of a thread listing page. Cursors reach clients, so decoding treats its
// input as untrusted.
package cursor

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deer-go/deer-go/infra/store"
)

// Position is the last row of a page: listing continues with rows ordered after it (older, or as old with a
// greater id).
type Position struct {
	UpdatedAt time.Time
	ID        string
}

// maxLen bounds what Decode looks at; real cursors are far shorter.
const maxLen = 4096

// b64 is the cursor alphabet: URL-safe so cursors travel in query strings unescaped, strict so one position has
// one spelling.
func b64() *base64.Encoding { return base64.RawURLEncoding.Strict() }

// Encode returns the opaque cursor for p.
func Encode(p Position) string {
	raw := strconv.FormatInt(p.UpdatedAt.UnixNano(), 10) + ":" + p.ID
	return b64().EncodeToString([]byte(raw))
}

// Decode parses a cursor made by Encode. Errors wrap store.ErrInvalidCursor.
func Decode(s string) (Position, error) {
	if s == "" || len(s) > maxLen {
		return Position{}, fmt.Errorf("%w: bad length", store.ErrInvalidCursor)
	}
	raw, err := b64().DecodeString(s)
	if err != nil {
		return Position{}, fmt.Errorf("%w: %w", store.ErrInvalidCursor, err)
	}
	ns, id, ok := strings.Cut(string(raw), ":")
	if !ok || id == "" {
		return Position{}, fmt.Errorf("%w: no id", store.ErrInvalidCursor)
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return Position{}, fmt.Errorf("%w: %w", store.ErrInvalidCursor, err)
	}
	return Position{UpdatedAt: time.Unix(0, n).UTC(), ID: id}, nil
}
