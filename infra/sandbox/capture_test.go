package sandbox

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		limit     int
		writes    []string
		wantKept  string
		wantTotal int64
	}{
		{name: "under limit", limit: 10, writes: []string{"abc", "def"}, wantKept: "abcdef", wantTotal: 6},
		{name: "exact limit", limit: 6, writes: []string{"abc", "def"}, wantKept: "abcdef", wantTotal: 6},
		{name: "split write", limit: 4, writes: []string{"abc", "def"}, wantKept: "abcd", wantTotal: 6},
		{name: "after full", limit: 3, writes: []string{"abc", "def", "ghi"}, wantKept: "abc", wantTotal: 9},
		{name: "zero limit", limit: 0, writes: []string{"abc"}, wantKept: "", wantTotal: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCapBuffer(tt.limit)
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			kept, total := b.snapshot()
			if string(kept) != tt.wantKept || total != tt.wantTotal {
				t.Errorf("snapshot = %q, %d; want %q, %d", kept, total, tt.wantKept, tt.wantTotal)
			}
		})
	}
}

func TestSplitBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		outLen, errLen   int64
		max              int
		wantOut, wantErr int
	}{
		{name: "fits", outLen: 10, errLen: 20, max: 100, wantOut: 10, wantErr: 20},
		{name: "stdout flood keeps short stderr", outLen: 1000, errLen: 30, max: 100, wantOut: 70, wantErr: 30},
		{name: "stderr flood keeps short stdout", outLen: 20, errLen: 1000, max: 100, wantOut: 20, wantErr: 80},
		{name: "both flood", outLen: 1000, errLen: 1000, max: 100, wantOut: 50, wantErr: 50},
		{name: "odd max", outLen: 1000, errLen: 1000, max: 101, wantOut: 51, wantErr: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotOut, gotErr := splitBudget(tt.outLen, tt.errLen, tt.max)
			if gotOut != tt.wantOut || gotErr != tt.wantErr {
				t.Errorf("splitBudget = %d, %d; want %d, %d", gotOut, gotErr, tt.wantOut, tt.wantErr)
			}
		})
	}
}

func TestTruncateUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		total    int64
		max      int
		want     string
		wantTrim bool
	}{
		{name: "no cut", in: "hello", total: 5, max: 10, want: "hello"},
		{name: "ascii cut", in: "hello world", total: 11, max: 5,
			want: "hello\n... [output truncated: 6 bytes omitted]", wantTrim: true},
		{name: "cut inside rune", in: "aé", total: 3, max: 2, // é is 2 bytes
			want: "a\n... [output truncated: 2 bytes omitted]", wantTrim: true},
		{name: "cut inside emoji", in: "ab🦌", total: 6, max: 4,
			want: "ab\n... [output truncated: 4 bytes omitted]", wantTrim: true},
		{name: "more was discarded than kept", in: "abcd", total: 1000, max: 4,
			want: "abcd\n... [output truncated: 996 bytes omitted]", wantTrim: true},
		{name: "invalid bytes replaced", in: "a\xffb", total: 3, max: 10, want: "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, trimmed := truncateUTF8([]byte(tt.in), tt.total, tt.max)
			if got != tt.want || trimmed != tt.wantTrim {
				t.Errorf("truncateUTF8 = %q, %v; want %q, %v", got, trimmed, tt.want, tt.wantTrim)
			}
		})
	}
}

// FuzzTruncateUTF8 feeds arbitrary child output through capture and cut.
func FuzzTruncateUTF8(f *testing.F) {
	f.Add([]byte("hello world"), 5)
	f.Add([]byte("é世🦌é世🦌"), 7)
	f.Add([]byte("\xff\xfe\x80abc"), 2)
	f.Add([]byte(""), 0)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 || max > 1<<16 {
			t.Skip()
		}
		b := newCapBuffer(max)
		if _, err := b.Write(data); err != nil {
			t.Fatal(err)
		}
		kept, total := b.snapshot()
		got, trimmed := truncateUTF8(kept, total, max)
		if !utf8.ValidString(got) {
			t.Fatalf("result is not valid UTF-8: %q", got)
		}
		if trimmed != (len(data) > max) {
			t.Fatalf("trimmed = %v for len %d, max %d", trimmed, len(data), max)
		}
		body, _, _ := strings.Cut(got, "\n... [output truncated:")
		if !trimmed {
			body = got
		}
		if utf8.Valid(data) {
			if !strings.HasPrefix(string(data), body) {
				t.Fatalf("result %q is not a prefix of the input", body)
			}
			if len(body) > max {
				t.Fatalf("kept %d bytes, max %d", len(body), max)
			}
			if trimmed && len(body) < max-(utf8.UTFMax-1) {
				t.Fatalf("kept only %d bytes of max %d", len(body), max)
			}
		} else if !trimmed && !bytes.Equal([]byte(body), []byte(strings.ToValidUTF8(string(data), "\uFFFD"))) {
			t.Fatalf("untruncated invalid input not sanitised as expected")
		}
	})
}
