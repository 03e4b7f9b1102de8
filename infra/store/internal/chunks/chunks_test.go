package chunks

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deer-go/deer-go/infra/store"
)

func ev(seq int64, typ, data string) store.Event {
	return store.Event{Seq: seq, Type: typ, Data: json.RawMessage(data)}
}

func TestCompact(t *testing.T) {
	tests := []struct {
		name   string
		in     []store.Event
		delete []int64
		update map[int64]map[string]any
	}{
		{
			name: "one message in three chunks",
			in: []store.Event{
				ev(1, TypeMessageChunk, `{"id":"m1","agent":"planner","content":"a","reasoning_content":"r"}`),
				ev(2, TypeMessageChunk, `{"id":"m1","agent":"planner","content":"b"}`),
				ev(3, TypeMessageChunk, `{"id":"m1","agent":"planner","content":"<c>","finish_reason":"stop"}`),
			},
			delete: []int64{1, 2},
			update: map[int64]map[string]any{3: {
				"id": "m1", "agent": "planner", "content": "ab<c>", "reasoning_content": "r", "finish_reason": "stop",
			}},
		},
		{
			name: "other events break runs and stay",
			in: []store.Event{
				ev(1, TypeMessageChunk, `{"id":"m1","content":"a"}`),
				ev(2, "tool_calls", `{"id":"m1","tool_calls":[]}`),
				ev(3, TypeMessageChunk, `{"id":"m1","content":"b"}`),
				ev(4, TypeMessageChunk, `{"id":"m1","content":"c"}`),
			},
			delete: []int64{3},
			update: map[int64]map[string]any{4: {"id": "m1", "content": "bc"}},
		},
		{
			name: "different ids are different messages",
			in: []store.Event{
				ev(5, TypeMessageChunk, `{"id":"m1","content":"a"}`),
				ev(6, TypeMessageChunk, `{"id":"m2","content":"b"}`),
				ev(7, TypeMessageChunk, `{"id":"m2","content":"c"}`),
			},
			delete: []int64{6},
			update: map[int64]map[string]any{7: {"id": "m2", "content": "bc"}},
		},
		{
			name: "null content counts as empty and unparsable data ends a run",
			in: []store.Event{
				ev(1, TypeMessageChunk, `{"id":"m1","content":null,"reasoning_content":"x"}`),
				ev(2, TypeMessageChunk, `{"id":"m1","content":"y"}`),
				ev(3, TypeMessageChunk, `not json`),
				ev(4, TypeMessageChunk, `{"id":"m1","content":7}`),
				ev(5, TypeMessageChunk, `{"content":"no id"}`),
			},
			delete: []int64{1},
			update: map[int64]map[string]any{2: {"id": "m1", "content": "y", "reasoning_content": "x"}},
		},
		{
			name: "single chunks and empty logs change nothing",
			in:   []store.Event{ev(1, TypeMessageChunk, `{"id":"m1","content":"a"}`), ev(2, "done", `{}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compact(tt.in)
			if err != nil {
				t.Fatalf("Compact: %v", err)
			}
			if !reflect.DeepEqual(p.Delete, tt.delete) {
				t.Errorf("Delete = %v, want %v", p.Delete, tt.delete)
			}
			if len(p.Update) != len(tt.update) {
				t.Fatalf("Update = %d events, want %d", len(p.Update), len(tt.update))
			}
			for _, u := range p.Update {
				want, ok := tt.update[u.Seq]
				if !ok {
					t.Fatalf("unexpected update of seq %d", u.Seq)
				}
				var got map[string]any
				if err := json.Unmarshal(u.Data, &got); err != nil {
					t.Fatalf("merged data %s: %v", u.Data, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("seq %d = %v, want %v", u.Seq, got, want)
				}
				if strings.Contains(string(u.Data), `\u003c`) {
					t.Errorf("merged data is HTML-escaped: %s", u.Data)
				}
			}
			if p.Empty() != (len(tt.delete) == 0 && len(tt.update) == 0) {
				t.Errorf("Empty() = %v", p.Empty())
			}
		})
	}
}

// transcript concatenates the text of every message, which must be the same before and after compaction.
func transcript(events []store.Event) map[string]string {
	out := map[string]string{}
	for _, e := range events {
		var m map[string]json.RawMessage
		if e.Type != TypeMessageChunk || json.Unmarshal(e.Data, &m) != nil {
			continue
		}
		var id string
		if json.Unmarshal(m["id"], &id) != nil || id == "" {
			continue
		}
		for _, key := range []string{"content", "reasoning_content"} {
			var s string
			if json.Unmarshal(m[key], &s) == nil {
				out[id+"/"+key] += s
			}
		}
	}
	return out
}

func FuzzCompact(f *testing.F) {
	f.Add(`{"id":"m1","content":"a"}`, `{"id":"m1","content":"b","reasoning_content":"c"}`, `{"id":"m2"}`)
	f.Add(`{"id":"m1","content":null}`, `[]`, `{"id":"m1","content":"\u0000<&>"}`)
	f.Add(`{"id":1}`, `{"id":"x","content":{"a":1}}`, `null`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		in := []store.Event{
			ev(1, TypeMessageChunk, a), ev(2, TypeMessageChunk, b), ev(3, TypeMessageChunk, c), ev(4, "done", `{}`),
		}
		p, err := Compact(in)
		if err != nil {
			t.Fatalf("Compact: %v", err)
		}
		out := Apply(in, p)
		if len(out) != len(in)-len(p.Delete) {
			t.Fatalf("Apply kept %d of %d with %d deletions", len(out), len(in), len(p.Delete))
		}
		for i := 1; i < len(out); i++ {
			if out[i].Seq <= out[i-1].Seq {
				t.Fatalf("seq order broken: %v", out)
			}
		}
		if out[len(out)-1].Seq != 4 {
			t.Fatalf("last event moved: %v", out)
		}
		for _, u := range p.Update {
			if !json.Valid(u.Data) {
				t.Fatalf("merged data is not JSON: %q", u.Data)
			}
		}
		if before, after := transcript(in), transcript(out); !reflect.DeepEqual(before, after) {
			t.Fatalf("text changed: %v -> %v", before, after)
		}
	})
}
