package sandbox

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// capBuffer keeps the first limit bytes written to it and counts, but drops,
// the rest, so a chatty child never blocks on a full pipe.
type capBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

func newCapBuffer(limit int) *capBuffer {
	return &capBuffer{limit: limit}
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	if room := b.limit - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// snapshot returns the kept bytes and the total number of bytes written.
func (b *capBuffer) snapshot() ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf, b.total
}

// splitBudget shares max bytes between stdout and stderr. A stream that needs
// less than half leaves the rest to the other one, so a flood on stdout cannot
// crowd out a short traceback on stderr and vice versa.
func splitBudget(outLen, errLen int64, max int) (outMax, errMax int) {
	if outLen+errLen <= int64(max) {
		return int(outLen), int(errLen)
	}
	half := max / 2
	switch {
	case errLen <= int64(half):
		return max - int(errLen), int(errLen)
	case outLen <= int64(max-half):
		return int(outLen), max - int(outLen)
	default:
		return max - half, half
	}
}

// truncateUTF8 returns s cut to at most max bytes without splitting a UTF-8
// sequence, with a marker saying how much of total was dropped. Invalid UTF-8
// is replaced so the text is always safe to hand to a model.
func truncateUTF8(s []byte, total int64, max int) (string, bool) {
	if max < 0 {
		max = 0
	}
	if total <= int64(max) && len(s) <= max {
		return strings.ToValidUTF8(string(s), "\uFFFD"), false
	}
	n := min(max, len(s))
	// Drop a trailing incomplete sequence: look back for the last rune start
	// and cut before it unless the rune is whole within s[:n].
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRune(s[i:n]) {
				n = i
			}
			break
		}
	}
	kept := strings.ToValidUTF8(string(s[:n]), "\uFFFD")
	return kept + fmt.Sprintf("\n... [output truncated: %d bytes omitted]", total-int64(n)), true
}
