package stream

import (
	"strings"
	"testing"
)

// splitAll feeds chunks through one splitter as the emitter does and returns the collected text (flush included)
// and reasoning.
func splitAll(chunks []string) (text, reasoning string) {
	t := &thinkSplitter{}
	var tb, rb strings.Builder
	for _, c := range chunks {
		x, r := t.split(c)
		tb.WriteString(x)
		rb.WriteString(r)
	}
	tb.WriteString(t.flush())
	return tb.String(), rb.String()
}

func TestThinkSplitter(t *testing.T) {
	tests := []struct {
		name          string
		chunks        []string
		wantText      string
		wantReasoning string
	}{
		{"no tags", []string{"hello ", "world"}, "hello world", ""},
		{"empty", nil, "", ""},
		{"empty chunks", []string{"", "", ""}, "", ""},
		{"block in one chunk", []string{"<think>plan it</think>answer"}, "answer", "plan it"},
		{"text before and after", []string{"a<think>b</think>c"}, "ac", "b"},
		{"two blocks", []string{"<think>x</think>1<think>y</think>2"}, "12", "xy"},
		{"empty block", []string{"<think></think>done"}, "done", ""},
		{"text after close in later chunk", []string{"<think>r</think>", "t1", "t2"}, "t1t2", "r"},
		{"unclosed think", []string{"x<think>abc", "def"}, "x", "abcdef"},
		{"open tag split", []string{"<th", "ink>r</think>t"}, "t", "r"},
		{"close tag split", []string{"<think>r</", "think>t"}, "t", "r"},
		{"tag split byte by byte", strings.Split("<think>r</think>t", ""), "t", "r"},
		{"partial open tag at end flushed as text", []string{"answer <thi"}, "answer <thi", ""},
		{"lone angle bracket at end", []string{"a <"}, "a <", ""},
		{"partial that turns out not to be a tag", []string{"x <thi", "ng>"}, "x <thing>", ""},
		{"angle brackets before tag", []string{"<<", "think>r</think>"}, "<", "r"},
		{"close tag outside think is text", []string{"a</think>b"}, "a</think>b", ""},
		{"open tag inside think is reasoning", []string{"<think>a<think>b</think>c"}, "c", "a<think>b"},
		{"partial close at end of unclosed think dropped", []string{"<think>ab</thi"}, "", "ab"},
		{"multibyte around tags", []string{"é<think>ü</think>ß"}, "éß", "ü"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, reasoning := splitAll(tt.chunks)
			if text != tt.wantText || reasoning != tt.wantReasoning {
				t.Errorf("splitAll(%q) = (%q, %q), want (%q, %q)", tt.chunks, text, reasoning, tt.wantText, tt.wantReasoning)
			}
		})
	}
}

// TestThinkSplitterEveryBoundary cuts the input into two and three chunks at every possible position: a tag split
// anywhere must give the single-shot result.
func TestThinkSplitterEveryBoundary(t *testing.T) {
	inputs := []struct {
		in            string
		wantText      string
		wantReasoning string
	}{
		{"a<think>b</think>c", "ac", "b"},
		{"<think>why</think>because", "because", "why"},
		{"pre<think>r1</think>mid<think>r2</think>post", "premidpost", "r1r2"},
		{"x <thin y", "x <thin y", ""},
	}
	for _, tc := range inputs {
		s := tc.in
		for i := 0; i <= len(s); i++ {
			for j := i; j <= len(s); j++ {
				chunks := []string{s[:i], s[i:j], s[j:]}
				text, reasoning := splitAll(chunks)
				if text != tc.wantText || reasoning != tc.wantReasoning {
					t.Fatalf("splitAll(%q) = (%q, %q), want (%q, %q)", chunks, text, reasoning, tc.wantText, tc.wantReasoning)
				}
			}
		}
	}
}

func TestStripThink(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"<think>r</think>answer", "answer"},
		{"<think>unclosed", ""},
		{"tail <thi", "tail <thi"},
	}
	for _, tt := range tests {
		if got := stripThink(tt.in); got != tt.want {
			t.Errorf("stripThink(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzThinkSplitter checks that how the stream is chunked never changes what ends up as text and reasoning.
// cuts drives the chunking: each byte is the length of the next chunk.
func FuzzThinkSplitter(f *testing.F) {
	f.Add("a<think>b</think>c", []byte{1, 2, 3})
	f.Add("<think>x</think>", []byte{7, 1})
	f.Add("no tags at all", []byte{0, 0, 5})
	f.Add("<thi<think>r</th</think>t<", []byte{3, 1, 4, 1, 5})
	f.Add("<<<<think>>>></think></think>", []byte{2})
	f.Fuzz(func(t *testing.T, s string, cuts []byte) {
		var chunks []string
		rest := s
		for _, c := range cuts {
			if rest == "" {
				break
			}
			n := min(int(c), len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		chunks = append(chunks, rest)

		wantText, wantReasoning := splitAll([]string{s})
		text, reasoning := splitAll(chunks)
		if text != wantText || reasoning != wantReasoning {
			t.Fatalf("chunks %q: got (%q, %q), single shot (%q, %q)", chunks, text, reasoning, wantText, wantReasoning)
		}
		if got := stripThink(s); got != wantText {
			t.Fatalf("stripThink(%q) = %q, splitter text %q", s, got, wantText)
		}
		if !strings.Contains(s, openTag) && (text != s || reasoning != "") {
			t.Fatalf("input without %s changed: (%q, %q)", openTag, text, reasoning)
		}
	})
}
