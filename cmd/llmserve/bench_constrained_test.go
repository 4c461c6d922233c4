package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// benchModel synthesizes the tiny llama (built-in 261-token byte-level
// vocabulary) once per test.
func benchModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := run([]string{"synth", "--arch", "llama", "--shape", "tiny", "--type", "Q8_0", "--seed", "5", "-o", path}); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeTemp writes text into a file of dir and returns its path.
func writeTemp(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ctgLine matches a constrained line of the bench report.
var ctgLine = regexp.MustCompile(`(?m)^ctg(\d+) B=(\d+) +c=(\d+) +([0-9.]+) tok/s .*mask .* per constrained token, (\d+) of (\d+) tokens banned on average; (\d+) documents ended, (\d+) invalid\)$`)

// TestBenchConstrained runs bench with a JSON schema, a GBNF grammar and
// the shipped 20-property schema, and checks that every B has its
// all-constrained and mixed rows, that their masks banned tokens and that
// every document that ended parsed.
func TestBenchConstrained(t *testing.T) {
	model := benchModel(t)
	dir := t.TempDir()
	small := writeTemp(t, dir, "small.json", `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`)
	yesNo := writeTemp(t, dir, "yesno.gbnf", `root ::= ("yes" | "no") "."`)
	tests := []struct {
		name    string
		flags   []string
		batches string
		rows    map[string]bool // "B/c" rows wanted
		docs    bool            // documents must end within the run
	}{
		{"schema", []string{"--json-schema", small}, "1,4", map[string]bool{"1/1": true, "4/4": true, "4/2": true}, true},
		{"grammar", []string{"--grammar", yesNo}, "2", map[string]bool{"2/2": true, "2/1": true}, true},
		{"cold", []string{"--json-schema", small, "--cold-grammar"}, "2", map[string]bool{"2/2": true, "2/1": true}, true},
		{"quarter", []string{"--json-schema", small, "--constrained-share", "0.25"}, "4", map[string]bool{"4/4": true, "4/1": true}, true},
		{"shipped schema", []string{"--json-schema", filepath.Join("..", "..", "scripts", "bench-schema.json")}, "2", map[string]bool{"2/2": true, "2/1": true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			args := append([]string{"-m", model, "-p", "4", "-n", "48", "-B", tt.batches, "-t", "1", "-ngl", "0"}, tt.flags...)
			if err := benchTo(&out, args); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			text := out.String()
			if !strings.Contains(text, "constraint: ") {
				t.Errorf("no constraint line:\n%s", text)
			}
			got := map[string]bool{}
			docs := 0
			for _, m := range ctgLine.FindAllStringSubmatch(text, -1) {
				got[m[2]+"/"+m[3]] = true
				banned, _ := strconv.Atoi(m[5])
				vocab, _ := strconv.Atoi(m[6])
				if banned <= 0 || banned >= vocab {
					t.Errorf("row B=%s c=%s: %d of %d tokens banned per step", m[2], m[3], banned, vocab)
				}
				if m[8] != "0" {
					t.Errorf("row B=%s c=%s: %s invalid documents", m[2], m[3], m[8])
				}
				n, _ := strconv.Atoi(m[7])
				docs += n
			}
			for row := range tt.rows {
				if !got[row] {
					t.Errorf("no ctg row B/c = %s:\n%s", row, text)
				}
			}
			if len(got) != len(tt.rows) {
				t.Errorf("ctg rows %v, want %v:\n%s", got, tt.rows, text)
			}
			if tt.docs && docs == 0 {
				t.Errorf("no constrained document ended in 48 tokens:\n%s", text)
			}
		})
	}
}

// TestBenchConstraintFlags checks that bad constraint flags and files fail
// with a message naming the problem.
func TestBenchConstraintFlags(t *testing.T) {
	model := benchModel(t)
	dir := t.TempDir()
	schema := writeTemp(t, dir, "s.json", `{"type":"boolean"}`)
	gbnf := writeTemp(t, dir, "g.gbnf", `root ::= "a"`)
	badSchema := writeTemp(t, dir, "bad.json", `{"type":"string","pattern":"(a|b"}`)
	notJSON := writeTemp(t, dir, "nj.json", `{"type":`)
	badGBNF := writeTemp(t, dir, "bad.gbnf", `root ::= "a`)
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"both", []string{"--json-schema", schema, "--grammar", gbnf}, "not both"},
		{"share 0", []string{"--json-schema", schema, "--constrained-share", "0"}, "--constrained-share"},
		{"share above 1", []string{"--json-schema", schema, "--constrained-share", "1.5"}, "--constrained-share"},
		{"missing file", []string{"--json-schema", filepath.Join(dir, "none.json")}, "none.json"},
		{"not JSON", []string{"--json-schema", notJSON}, "--json-schema"},
		{"unsupported schema", []string{"--json-schema", badSchema}, "--json-schema"},
		{"GBNF syntax", []string{"--grammar", badGBNF}, "--grammar"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := benchTo(&out, append([]string{"-m", model, "-p", "1", "-n", "2", "-t", "1", "-ngl", "0"}, tt.flags...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestCheckConstrained feeds documents through a counting matcher whose
// grammar writes text that is not JSON, and checks that the run is failed.
func TestCheckConstrained(t *testing.T) {
	model := benchModel(t)
	f, _, err := openModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := writeTemp(t, t.TempDir(), "brace.gbnf", `root ::= "{"`)
	tests := []struct {
		kind    string
		wantErr bool
	}{
		{"json_schema", true}, // "{" does not parse as JSON
		{"grammar", false},    // a GBNF grammar's text need not be JSON
	}
	for _, tt := range tests {
		g, err := loadBenchGrammar(f, "grammar", path)
		if err != nil {
			t.Fatal(err)
		}
		g.kind = tt.kind
		m, err := newCountedMatcher(g)
		if err != nil {
			t.Fatal(err)
		}
		mask := make([]uint64, (g.vocab+63)/64)
		brace, eos := int32(-1), int32(-1)
		for id := range int32(g.vocab) {
			switch {
			case string(g.tok.TokenBytes(id)) == "{" && !g.tok.IsControl(id):
				brace = id
			case g.tok.IsEOG(id) && eos < 0:
				eos = id
			}
		}
		if brace < 0 || eos < 0 {
			t.Fatalf("the vocabulary has no %q token or no end token", "{")
		}
		for _, tok := range []int32{brace, eos} {
			if err := m.Allowed(mask); err != nil {
				t.Fatal(err)
			}
			if err := m.Accept(tok); err != nil {
				t.Fatal(err)
			}
		}
		st := sumMatchers([]*countedMatcher{m})
		if st.docs != 1 || st.masks != 2 || st.banned <= 0 {
			t.Errorf("%s: stats %+v, want 1 document from 2 masks that banned tokens", tt.kind, st)
		}
		if err := checkConstrained(st); (err != nil) != tt.wantErr {
			t.Errorf("%s: checkConstrained = %v, want an error: %v", tt.kind, err, tt.wantErr)
		}
	}
}

func TestConstrainedRows(t *testing.T) {
	tests := []struct {
		share float64
		B     int
		want  int
	}{
		{0, 8, 0}, {0.5, 1, 1}, {0.5, 16, 8}, {0.5, 3, 2}, {0.01, 4, 1}, {1, 16, 16}, {0.25, 16, 4},
	}
	for _, tt := range tests {
		if got := constrainedRows(tt.share, tt.B); got != tt.want {
			t.Errorf("constrainedRows(%v, %d) = %d, want %d", tt.share, tt.B, got, tt.want)
		}
	}
}

// TestBenchContext runs bench with a context longer than its prompt and
// generation (-c), and with exactly theirs, and refuses a shorter one or
// one past 2^20 positions.
func TestBenchContext(t *testing.T) {
	model := benchModel(t)
	for _, c := range []string{"2", "2000000"} {
		err := benchTo(io.Discard, []string{"-m", model, "-p", "1", "-n", "2", "-t", "1", "-ngl", "0", "-c", c})
		if err == nil || !strings.Contains(err.Error(), "-c "+c) {
			t.Errorf("-c %s: error %v, want one naming -c %s", c, err, c)
		}
	}
	for _, c := range []string{"64", "3"} {
		var out bytes.Buffer
		if err := benchTo(&out, []string{"-m", model, "-p", "1", "-n", "2", "-t", "1", "-ngl", "0", "-B", "1,2", "-c", c}); err != nil {
			t.Errorf("-c %s: %v", c, err)
		} else if !strings.Contains(out.String(), "tg2 B=2") {
			t.Errorf("-c %s: no tg2 B=2 line in\n%s", c, out.String())
		}
	}
}
