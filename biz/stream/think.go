package stream

import "strings"

// Some models (DeepSeek-R1 and Qwen3 served by Ollama or vLLM) inline their reasoning as <think>…</think> in the
// content. thinkSplitter moves it to reasoning_content while streaming, also when a tag is split across chunks.
type thinkSplitter struct {
	inThink bool
	pending string // a possible partial tag held back from the previous chunk
}

const (
	openTag  = "<think>"
	closeTag = "</think>"
)

func (t *thinkSplitter) split(s string) (text, reasoning string) {
	s = t.pending + s
	t.pending = ""
	var tb, rb strings.Builder
	for s != "" {
		tag := openTag
		if t.inThink {
			tag = closeTag
		}
		if i := strings.Index(s, tag); i >= 0 {
			t.write(&tb, &rb, s[:i])
			s = s[i+len(tag):]
			t.inThink = !t.inThink
			continue
		}
		// Hold back a suffix that could be the start of the tag.
		keep := 0
		for k := len(tag) - 1; k > 0; k-- {
			if strings.HasSuffix(s, tag[:k]) {
				keep = k
				break
			}
		}
		t.write(&tb, &rb, s[:len(s)-keep])
		t.pending = s[len(s)-keep:]
		break
	}
	return tb.String(), rb.String()
}

func (t *thinkSplitter) write(tb, rb *strings.Builder, s string) {
	if t.inThink {
		rb.WriteString(s)
	} else {
		tb.WriteString(s)
	}
}

// flush returns held-back text at the end of the stream.
func (t *thinkSplitter) flush() string {
	p := t.pending
	t.pending = ""
	if t.inThink {
		return ""
	}
	return p
}

// stripThink removes <think> blocks from a complete text.
func stripThink(s string) string {
	t := &thinkSplitter{}
	text, _ := t.split(s)
	return text + t.flush()
}
