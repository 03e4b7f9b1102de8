// Package chunks folds the streamed pieces of a message in a stored event log back into whole messages, so a
// finished thread replays with a handful of events instead of one per token.
package chunks

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/deer-go/deer-go/infra/store"
)

// TypeMessageChunk is the event type of one streamed piece of an assistant message.
const TypeMessageChunk = "message_chunk"

// Plan says how to rewrite a slice of the event log: drop the events in Delete and replace the data of the events
// in Update (matched by Seq). Sequence numbers never change, so the thread's LastSeq stays valid.
type Plan struct {
	Delete []int64
	Update []store.Event
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Delete) == 0 && len(p.Update) == 0 }

// chunk is a message_chunk event whose data could be understood well enough to merge.
type chunk struct {
	ev        store.Event
	fields    map[string]json.RawMessage
	id        string
	content   string
	reasoning string
	hasText   bool // "content" present
	hasReason bool // "reasoning_content" present
}

// Compact plans the merge of every run of consecutive message_chunk events with the same non-empty "id" in
// events (which must be in Seq order). The merged event keeps the last chunk's Seq, At and fields, with
// "content" and "reasoning_content" replaced by the concatenation over the run. Events that are not chunks, or
// whose data is not a JSON object with string text fields, are left alone and end a run.
func Compact(events []store.Event) (Plan, error) {
	var p Plan
	for i := 0; i < len(events); {
		first, ok := parse(events[i])
		if !ok {
			i++
			continue
		}
		run := []chunk{first}
		j := i + 1
		for ; j < len(events); j++ {
			c, ok := parse(events[j])
			if !ok || c.id != first.id {
				break
			}
			run = append(run, c)
		}
		i = j
		if len(run) < 2 {
			continue
		}
		merged, err := merge(run)
		if err != nil {
			return Plan{}, fmt.Errorf("merge chunks of message %q: %w", first.id, err)
		}
		for _, c := range run[:len(run)-1] {
			p.Delete = append(p.Delete, c.ev.Seq)
		}
		p.Update = append(p.Update, merged)
	}
	return p, nil
}

// Apply returns events with the plan applied; it is what a store holds after carrying out the plan.
func Apply(events []store.Event, p Plan) []store.Event {
	drop := make(map[int64]bool, len(p.Delete))
	for _, s := range p.Delete {
		drop[s] = true
	}
	repl := make(map[int64]store.Event, len(p.Update))
	for _, e := range p.Update {
		repl[e.Seq] = e
	}
	out := make([]store.Event, 0, len(events)-len(p.Delete))
	for _, e := range events {
		if drop[e.Seq] {
			continue
		}
		if r, ok := repl[e.Seq]; ok {
			e = r
		}
		out = append(out, e)
	}
	return out
}

func parse(ev store.Event) (chunk, bool) {
	if ev.Type != TypeMessageChunk {
		return chunk{}, false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &fields); err != nil || fields == nil {
		return chunk{}, false
	}
	c := chunk{ev: ev, fields: fields}
	if err := json.Unmarshal(fields["id"], &c.id); err != nil || c.id == "" {
		return chunk{}, false
	}
	var ok bool
	if c.content, c.hasText, ok = text(fields, "content"); !ok {
		return chunk{}, false
	}
	if c.reasoning, c.hasReason, ok = text(fields, "reasoning_content"); !ok {
		return chunk{}, false
	}
	return c, true
}

// text reads an optional string field; null counts as absent, any other non-string makes the chunk unmergeable.
func text(fields map[string]json.RawMessage, key string) (s string, present, ok bool) {
	raw, found := fields[key]
	if !found || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", false, true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, false
	}
	return s, true, true
}

func merge(run []chunk) (store.Event, error) {
	last := run[len(run)-1]
	var content, reasoning bytes.Buffer
	var hasText, hasReason bool
	for _, c := range run {
		content.WriteString(c.content)
		reasoning.WriteString(c.reasoning)
		hasText = hasText || c.hasText
		hasReason = hasReason || c.hasReason
	}
	fields := make(map[string]json.RawMessage, len(last.fields)+2)
	for k, v := range last.fields {
		fields[k] = v
	}
	if hasText {
		raw, err := encode(content.String())
		if err != nil {
			return store.Event{}, err
		}
		fields["content"] = raw
	}
	if hasReason {
		raw, err := encode(reasoning.String())
		if err != nil {
			return store.Event{}, err
		}
		fields["reasoning_content"] = raw
	}
	data, err := encode(fields)
	if err != nil {
		return store.Event{}, err
	}
	ev := last.ev
	ev.Data = data
	return ev, nil
}

// encode marshals without HTML escaping so merged text reads the same as the chunks it came from.
func encode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
