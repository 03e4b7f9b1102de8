package model

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

var testDefaults = Defaults{MaxPlanIterations: 1, MaxStepNum: 3, MaxSearchResults: 5}

func decodeRequest(t *testing.T, body string) ChatRequest {
	t.Helper()
	var r ChatRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return r
}

func TestValidate(t *testing.T) {
	defaults := Settings{
		MaxPlanIterations:             1,
		MaxStepNum:                    3,
		MaxSearchResults:              5,
		EnableBackgroundInvestigation: true,
		EnableWebSearch:               true,
		MaxClarificationRounds:        3,
		ReportStyle:                   StyleAcademic,
		Locale:                        "en-US",
	}
	with := func(f func(*Settings)) Settings {
		s := defaults
		f(&s)
		return s
	}
	const hello = `"messages":[{"role":"user","content":"hello"}]`
	tests := []struct {
		name      string
		body      string
		want      Settings
		wantField string // non-empty: Validate must fail on this field
	}{
		{name: "defaults for absent fields", body: `{` + hello + `}`, want: defaults},
		{
			name: "explicit false kept",
			body: `{` + hello + `,"enable_background_investigation":false,"enable_web_search":false,"auto_accepted_plan":false}`,
			want: with(func(s *Settings) { s.EnableBackgroundInvestigation, s.EnableWebSearch = false, false }),
		},
		{
			name: "explicit values",
			body: `{` + hello + `,"locale":"zh-CN","auto_accepted_plan":true,"enable_deep_thinking":true,"enable_clarification":true,
				"max_plan_iterations":10,"max_step_num":20,"max_search_results":50,"max_clarification_rounds":0,"report_style":"news"}`,
			want: with(func(s *Settings) {
				s.Locale, s.AutoAcceptedPlan, s.EnableDeepThinking, s.EnableClarification = "zh-CN", true, true, true
				s.MaxPlanIterations, s.MaxStepNum, s.MaxSearchResults, s.MaxClarificationRounds = 10, 20, 50, 0
				s.ReportStyle = StyleNews
			}),
		},
		{name: "lower bounds", body: `{` + hello + `,"max_plan_iterations":1,"max_step_num":1,"max_search_results":1}`,
			want: with(func(s *Settings) { s.MaxPlanIterations, s.MaxStepNum, s.MaxSearchResults = 1, 1, 1 })},
		{name: "null fields are absent", body: `{` + hello + `,"enable_web_search":null,"report_style":null,"max_step_num":null}`, want: defaults},
		{name: "report style case-insensitive", body: `{` + hello + `,"report_style":"Popular_Science"}`,
			want: with(func(s *Settings) { s.ReportStyle = StylePopularScience })},
		{name: "unknown report style", body: `{` + hello + `,"report_style":"poetry"}`, wantField: "report_style"},
		{name: "empty report style", body: `{` + hello + `,"report_style":""}`, wantField: "report_style"},
		{name: "plan iterations zero", body: `{` + hello + `,"max_plan_iterations":0}`, wantField: "max_plan_iterations"},
		{name: "plan iterations too many", body: `{` + hello + `,"max_plan_iterations":11}`, wantField: "max_plan_iterations"},
		{name: "step num too many", body: `{` + hello + `,"max_step_num":21}`, wantField: "max_step_num"},
		{name: "step num negative", body: `{` + hello + `,"max_step_num":-1}`, wantField: "max_step_num"},
		{name: "search results too many", body: `{` + hello + `,"max_search_results":51}`, wantField: "max_search_results"},
		{name: "clarification rounds negative", body: `{` + hello + `,"max_clarification_rounds":-1}`, wantField: "max_clarification_rounds"},
		{name: "clarification rounds too many", body: `{` + hello + `,"max_clarification_rounds":11}`, wantField: "max_clarification_rounds"},
		{name: "no messages", body: `{"messages":[]}`, wantField: "messages"},
		{name: "messages absent", body: `{}`, wantField: "messages"},
		{name: "unknown role", body: `{"messages":[{"role":"user","content":"a"},{"role":"tool","content":"b"}]}`, wantField: "messages[1].role"},
		{name: "empty role", body: `{"messages":[{"content":"a"}]}`, wantField: "messages[0].role"},
		{
			name: "all roles accepted",
			body: `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`,
			want: defaults,
		},
		{name: "only assistant text", body: `{"messages":[{"role":"assistant","content":"a"}]}`, wantField: "messages"},
		{name: "blank user text", body: `{"messages":[{"role":"user","content":"  \n"}]}`, wantField: "messages"},
		{name: "null content", body: `{"messages":[{"role":"user","content":null}]}`, wantField: "messages"},
		{name: "content as list", body: `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, want: defaults},
		{name: "content as number", body: `{"messages":[{"role":"user","content":42}]}`, wantField: "messages[0].content"},
		{name: "content as object", body: `{"messages":[{"role":"user","content":{"text":"x"}}]}`, wantField: "messages[0].content"},
		{name: "content list of strings", body: `{"messages":[{"role":"user","content":["x"]}]}`, wantField: "messages[0].content"},
		{name: "thread id at limit", body: `{` + hello + `,"thread_id":"` + strings.Repeat("t", 128) + `"}`, want: defaults},
		{name: "thread id too long", body: `{` + hello + `,"thread_id":"` + strings.Repeat("t", 129) + `"}`, wantField: "thread_id"},
		{name: "thread id newline", body: `{` + hello + `,"thread_id":"a\nb"}`, wantField: "thread_id"},
		{name: "thread id NUL", body: `{` + hello + `,"thread_id":"a\u0000b"}`, wantField: "thread_id"},
		{name: "thread id DEL", body: `{` + hello + `,"thread_id":"a\u007fb"}`, wantField: "thread_id"},
		{name: "thread id unicode", body: `{` + hello + `,"thread_id":"线程-1"}`, want: defaults},
		{name: "feedback accepted", body: `{` + hello + `,"interrupt_feedback":"accepted"}`, want: defaults},
		{name: "feedback edit_plan", body: `{` + hello + `,"interrupt_feedback":"edit_plan"}`, want: defaults},
		{name: "feedback case and space", body: `{` + hello + `,"interrupt_feedback":" Accepted "}`, want: defaults},
		{name: "feedback empty", body: `{` + hello + `,"interrupt_feedback":""}`, want: defaults},
		{name: "feedback resume", body: `{` + hello + `,"interrupt_feedback":"resume"}`, want: defaults},
		{name: "feedback unknown", body: `{` + hello + `,"interrupt_feedback":"maybe"}`, wantField: "interrupt_feedback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decodeRequest(t, tt.body)
			got, err := r.Validate(testDefaults)
			if tt.wantField != "" {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("Validate error = %v, want a *FieldError on %s", err, tt.wantField)
				}
				if fe.Field != tt.wantField || fe.Message == "" {
					t.Errorf("FieldError = %+v, want field %s", fe, tt.wantField)
				}
				if !strings.HasPrefix(fe.Error(), tt.wantField+": ") {
					t.Errorf("Error() = %q", fe.Error())
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("settings = %+v\nwant       %+v", got, tt.want)
			}
		})
	}
}

func TestUserText(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"last user message", `{"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"reply"},{"role":"user","content":"second"},{"role":"assistant","content":"again"}]}`, "second"},
		{"list content", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":"x"},{"type":"text","text":"b"}]}]}`, "a\nb"},
		{"invalid last falls back", `{"messages":[{"role":"user","content":"ok"},{"role":"user","content":7}]}`, "ok"},
		{"no user message", `{"messages":[{"role":"system","content":"s"}]}`, ""},
		{"no messages", `{}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decodeRequest(t, tt.body)
			if got := r.UserText(); got != tt.want {
				t.Errorf("UserText() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChatMessageText(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string
		wantErr bool
	}{
		{"absent", ``, "", false},
		{"null", `null`, "", false},
		{"string", `"hello"`, "hello", false},
		{"string with escapes", `"a\nb \u00e9"`, "a\nb é", false},
		{"padded string", "  \"x\"\n", "x", false},
		{"empty list", `[]`, "", false},
		{"text items", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "a\nb", false},
		{"non-text items skipped", `[{"type":"image_url","image_url":"http://x"},{"type":"text","text":"t"}]`, "t", false},
		{"untyped item with text", `[{"text":"t"}]`, "t", false},
		{"empty text item kept", `[{"type":"text","text":""},{"type":"text","text":"b"}]`, "\nb", false},
		{"number", `12`, "", true},
		{"bool", `true`, "", true},
		{"object", `{"type":"text"}`, "", true},
		{"broken string", `"abc`, "", true},
		{"string then garbage", `"abc"x`, "", true},
		{"list of strings", `["a"]`, "", true},
		{"broken list", `[{"type":"text"`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChatMessage{Role: "user", Content: json.RawMessage(tt.content)}.Text()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Text() error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Text() = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzChatMessageText feeds arbitrary content: Text must never panic, and a JSON string must come back unchanged.
func FuzzChatMessageText(f *testing.F) {
	for _, s := range []string{`"hi"`, `[{"type":"text","text":"a"}]`, `null`, ``, `[`, `"`, `{}`, ` "x" `, `"\ud800"`, `[null]`, "\"\xff\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := (ChatMessage{Content: json.RawMessage(raw)}).Text(); err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}

		// Use the raw input as a string value too: encoding it must round-trip through Text (the encoder replaces
		// invalid UTF-8, so only valid input is compared).
		enc, err := json.Marshal(raw)
		if err != nil {
			t.Fatalf("marshal %q: %v", raw, err)
		}
		got, err := ChatMessage{Content: enc}.Text()
		if err != nil {
			t.Fatalf("Text(%s): %v", enc, err)
		}
		if utf8.ValidString(raw) && got != raw {
			t.Fatalf("Text(%s) = %q, want %q", enc, got, raw)
		}
	})
}
