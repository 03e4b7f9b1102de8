package cursor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deer-go/deer-go/infra/store"
)

func TestRoundTrip(t *testing.T) {
	tests := []Position{
		{UpdatedAt: time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC), ID: "t1"},
		{UpdatedAt: time.Date(1999, 12, 31, 23, 59, 59, 0, time.FixedZone("x", 3600)), ID: "with:colon/and ünïcode"},
		{UpdatedAt: time.Unix(0, 0), ID: "-"},
	}
	for _, p := range tests {
		t.Run(p.ID, func(t *testing.T) {
			c := Encode(p)
			got, err := Decode(c)
			if err != nil {
				t.Fatalf("Decode(%q): %v", c, err)
			}
			if !got.UpdatedAt.Equal(p.UpdatedAt) || got.ID != p.ID || got.UpdatedAt.Location() != time.UTC {
				t.Fatalf("got %+v, want %+v in UTC", got, p)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := map[string]string{
		"empty":       "",
		"not base64":  "!!!",
		"padded":      "MTI6YQ==",
		"no colon":    b64().EncodeToString([]byte("123")),
		"no id":       b64().EncodeToString([]byte("123:")),
		"bad number":  b64().EncodeToString([]byte("12x:id")),
		"overflowing": b64().EncodeToString([]byte("99999999999999999999:id")),
		"too long":    strings.Repeat("A", maxLen+1),
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(c); !errors.Is(err, store.ErrInvalidCursor) {
				t.Fatalf("Decode(%q) error = %v, want ErrInvalidCursor", c, err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Position{UpdatedAt: time.Unix(1700000000, 5), ID: "abc"}))
	f.Add("")
	f.Add("LTE6eA")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Decode(s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidCursor) {
				t.Fatalf("error %v does not wrap ErrInvalidCursor", err)
			}
			return
		}
		again, err := Decode(Encode(p))
		if err != nil || !again.UpdatedAt.Equal(p.UpdatedAt) || again.ID != p.ID {
			t.Fatalf("re-encoding %+v gave %+v, %v", p, again, err)
		}
	})
}
