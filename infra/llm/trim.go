package llm

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Token estimates avoid shipping a tokenizer per provider. Costs are kept in
// quarter tokens: an ASCII byte is 1/4 token (about 4 characters of English
// per token), a CJK character a whole token, and any other non-ASCII
// character half a token. The estimate errs towards counting too many.
const quartersPerToken = 4

func runeQuarters(r rune) int {
	switch {
	case r < utf8.RuneSelf:
		return 1
	case isCJK(r):
		return 4
	default:
		return 2
	}
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || // CJK punctuation
		(r >= 0xFF00 && r <= 0xFFEF) // full-width forms
}

func quarters(s string) int {
	n := 0
	for _, r := range s {
		n += runeQuarters(r)
	}
	return n
}

// EstimateTokens approximates how many tokens s costs (see TrimToTokens).
func EstimateTokens(s string) int {
	return (quarters(s) + quartersPerToken - 1) / quartersPerToken
}

func truncationMarker(removed int) string {
	return "\n…[truncated " + strconv.Itoa(removed) + " characters]"
}

// TrimToTokens shortens s to fit an estimated budget of maxTokens, appending
// a marker that says how many characters (runes) were dropped. The estimate
// is about 4 bytes per token for ASCII text and 1 token per CJK character.
// Cuts fall on character boundaries, preferably at the end of a line. When
// even the marker does not fit, the result is a bare prefix.
func TrimToTokens(s string, maxTokens int) string {
	if maxTokens <= 0 {
		return ""
	}
	// Every byte costs at most one token, so short inputs fit without
	// counting (this also keeps the budget arithmetic from overflowing).
	if maxTokens >= len(s) || EstimateTokens(s) <= maxTokens {
		return s
	}
	budget := maxTokens * quartersPerToken
	total := utf8.RuneCountInString(s)
	// Digits of the total bound the digits of the removed count.
	reserve := quarters(truncationMarker(total))
	if reserve > budget {
		return prefixWithin(s, budget)
	}
	kept := prefixWithin(s, budget-reserve)
	if i := strings.LastIndexByte(kept, '\n'); i > 0 && i >= len(kept)*4/5 {
		kept = kept[:i]
	}
	return kept + truncationMarker(total-utf8.RuneCountInString(kept))
}

// prefixWithin returns the longest prefix of s costing at most budget
// quarter tokens, ending on a character boundary.
func prefixWithin(s string, budget int) string {
	used := 0
	for i, r := range s {
		used += runeQuarters(r)
		if used > budget {
			return s[:i]
		}
	}
	return s
}
