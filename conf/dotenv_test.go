package conf

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{name: "empty", in: "", want: map[string]string{}},
		{name: "plain", in: "A=1\nB=two words\n", want: map[string]string{"A": "1", "B": "two words"}},
		{name: "crlf and bom", in: "\uFEFFA=1\r\nB=2\r\n", want: map[string]string{"A": "1", "B": "2"}},
		{name: "comments and blanks", in: "# c\n\n  # indented\nA=1 # trailing\nB=x#y\nC= #only comment\n", want: map[string]string{"A": "1", "B": "x#y", "C": ""}},
		{name: "export prefix", in: "export A=1\nexport\tB=2\nexport_C=3\n", want: map[string]string{"A": "1", "B": "2", "export_C": "3"}},
		{name: "spaces around", in: "  A =  spaced value  \n", want: map[string]string{"A": "spaced value"}},
		{name: "double quotes", in: `A="a b # not comment"` + "\n" + `B="line\nnext \"q\" \\ \t \x"` + " # c\n", want: map[string]string{"A": "a b # not comment", "B": "line\nnext \"q\" \\ \t \\x"}},
		{name: "single quotes literal", in: `A='a\nb "x" # y'` + "\n", want: map[string]string{"A": `a\nb "x" # y`}},
		{name: "empty values", in: "A=\nB=''\nC=\"\"\n", want: map[string]string{"A": "", "B": "", "C": ""}},
		{name: "equals in value", in: "A=x=y==\n", want: map[string]string{"A": "x=y=="}},
		{name: "later wins", in: "A=1\nA=2\n", want: map[string]string{"A": "2"}},
		{name: "missing equals", in: "A=1\nJUSTAKEY\n", wantErr: "line 2: missing '='"},
		{name: "bad key", in: "1A=1\n", wantErr: "line 1: invalid variable name"},
		{name: "dash key", in: "MY-KEY=1\n", wantErr: "invalid variable name"},
		{name: "empty key", in: "=1\n", wantErr: "invalid variable name"},
		{name: "unterminated double", in: "A=\"abc\n", wantErr: "unterminated double quote"},
		{name: "unterminated escape", in: "A=\"abc\\", wantErr: "unterminated double quote"},
		{name: "unterminated single", in: "A='abc\n", wantErr: "unterminated single quote"},
		{name: "text after quote", in: "A=\"abc\" def\n", wantErr: "after closing quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDotenv([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDotenvLayering(t *testing.T) {
	dir := t.TempDir()
	yml := writeFile(t, dir, "c.yaml", "server:\n  host: 10.0.0.1\n  port: 7000\ndata_dir: /from/yaml\n")
	dotenv := writeFile(t, dir, ".env", "PORT=9000\nHOST=127.0.0.2\nLLM_API_KEY=from-dotenv\nLOG_LEVEL=debug\n")
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "dotenv beats yaml",
			check: func(t *testing.T, c *Config) {
				if c.Addr() != "127.0.0.2:9000" || c.LLM.Basic.APIKey != "from-dotenv" || c.DataDir != "/from/yaml" {
					t.Fatalf("got addr=%s key=%q data=%s", c.Addr(), c.LLM.Basic.APIKey, c.DataDir)
				}
			},
		},
		{
			name: "real env beats dotenv",
			env:  map[string]string{"PORT": "9100", "LLM_API_KEY": "from-env"},
			check: func(t *testing.T, c *Config) {
				if c.Server.Port != 9100 || c.LLM.Basic.APIKey != "from-env" || c.Server.Host != "127.0.0.2" {
					t.Fatalf("got addr=%s key=%q", c.Addr(), c.LLM.Basic.APIKey)
				}
			},
		},
		{
			name: "set-but-empty real env blocks dotenv and keeps yaml",
			env:  map[string]string{"PORT": ""},
			check: func(t *testing.T, c *Config) {
				if c.Server.Port != 7000 {
					t.Fatalf("port = %d, want 7000 from yaml", c.Server.Port)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(yml, mapEnv(tt.env), dotenv)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}

	t.Run("missing dotenv is fine", func(t *testing.T) {
		if _, err := load(yml, mapEnv(nil), filepath.Join(dir, "absent.env")); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{
		"A=1\n", "export B='x'\n", "C=\"a\\nb\" # c\n", "# only\n", "D=x #y\r\n", "=\n", "E=\"\\", "\uFEFFF=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		vars, err := parseDotenv([]byte(in))
		if err != nil {
			return
		}
		for k := range vars {
			if !validEnvKey(k) {
				t.Fatalf("accepted invalid key %q", k)
			}
		}
	})
}

// A double-quoted value written with the supported escapes must read back unchanged.
func FuzzDotenvQuotedRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b", "back\\slash", "multi\nline\r\n", "# hash", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, val string) {
		enc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(val)
		vars, err := parseDotenv([]byte("KEY=\"" + enc + "\" # note\n"))
		if err != nil {
			t.Fatalf("parse %q: %v", enc, err)
		}
		if vars["KEY"] != val {
			t.Fatalf("round trip: got %q, want %q", vars["KEY"], val)
		}
	})
}
