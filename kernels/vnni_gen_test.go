package kernels

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateVNNI = flag.Bool("update-vnni", false, "rewrite the *_vnni_amd64.s files from their AVX2 sources")

// vnniSources maps each AVX512-VNNI assembly file to the AVX2 file it is
// derived from.
var vnniSources = map[string]string{
	"dot_kquant_vnni_amd64.s": "dot_kquant_amd64.s",
	"dot4_vnni_amd64.s":       "dot4_amd64.s",
	"dot_q8_vnni_amd64.s":     "dot_q8_amd64.s",
	"dot_legacy_vnni_amd64.s": "dot_legacy_amd64.s",
}

// TestVNNIInStep checks that each VNNI assembly file is what vnniFromAVX2
// makes of its AVX2 source, so a fix to an AVX2 kernel cannot leave its
// VNNI twin behind. go test ./kernels -run VNNIInStep -update-vnni rewrites
// them.
func TestVNNIInStep(t *testing.T) {
	for dst, src := range vnniSources {
		in, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		want := vnniFromAVX2(string(in), src)
		if *updateVNNI {
			if err := os.WriteFile(dst, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is not the VNNI form of %s: run go test ./kernels -run VNNIInStep -update-vnni", dst, src)
		}
	}
}

var (
	vnniSym   = regexp.MustCompile(`·(\w+)AVX2\(SB\)`)
	vnniFunc  = regexp.MustCompile(`// func (\w+)AVX2\(`)
	vnniLabel = regexp.MustCompile(`(?m)^(\w+):$`)
	vnniJump  = regexp.MustCompile(`(?m)^(\s*J[A-Z]+\s+)(\w+)$`)
)

// vnniFromAVX2 derives the AVX512-VNNI variant of an AVX2 assembly file:
//
//   - VPMADDWD S, B, B followed (within three lines) by VPADDD B, A, A
//     becomes VPDPWSSD S, B, A (the scale multiply fused with its sum);
//   - VPMADDUBSW X, U, D; VPMADDWD Y15, D, D (16-bit ones); VCVTDQ2PS D, F
//     becomes VPXOR T, T, T; VPDPBUSD X, U, T; VCVTDQ2PS T, F, with T = D
//     or Y3 where D is also an input;
//   - functions are renamed from ...AVX2 to ...VNNI and labels get a v.
func vnniFromAVX2(src, name string) string {
	lines := strings.Split(src, "\n")
	drop := map[int]bool{}
	for i, l := range lines {
		op, args, cont := asmLine(l)
		if op == "VPMADDWD" && len(args) == 3 && args[0] != "Y15" && args[1] == args[2] {
			for k := i + 1; k < min(i+4, len(lines)); k++ {
				op2, a2, _ := asmLine(lines[k])
				if op2 == "VPADDD" && len(a2) == 3 && a2[0] == args[1] && a2[1] == a2[2] && !drop[k] {
					lines[i] = asmFormat(l, "VPDPWSSD", []string{args[0], args[1], a2[1]}, cont)
					drop[k] = true
					break
				}
			}
		}
		if op == "VPMADDUBSW" && len(args) == 3 && i+2 < len(lines) {
			op2, a2, cont2 := asmLine(lines[i+1])
			op3, a3, cont3 := asmLine(lines[i+2])
			d := args[2]
			if op2 == "VPMADDWD" && len(a2) == 3 && a2[0] == "Y15" && a2[1] == d && a2[2] == d &&
				op3 == "VCVTDQ2PS" && len(a3) == 2 && a3[0] == d {
				tmp := d
				if d == args[0] || d == args[1] {
					tmp = "Y3"
				}
				lines[i] = asmFormat(l, "VPXOR", []string{tmp, tmp, tmp}, cont)
				lines[i+1] = asmFormat(lines[i+1], "VPDPBUSD", []string{args[0], args[1], tmp}, cont2)
				lines[i+2] = asmFormat(lines[i+2], "VCVTDQ2PS", []string{tmp, a3[1]}, cont3)
			}
		}
	}
	var out []string
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l)
		}
	}
	// A macro whose last line was dropped must not end in a continuation.
	for i := 0; i+1 < len(out); i++ {
		if strings.TrimSpace(out[i+1]) == "" && strings.HasSuffix(out[i], `\`) {
			out[i] = strings.TrimRight(strings.TrimSuffix(out[i], `\`), " \t")
		}
	}
	s := strings.Join(out, "\n")
	s = vnniSym.ReplaceAllString(s, "·${1}VNNI(SB)")
	s = vnniFunc.ReplaceAllString(s, "// func ${1}VNNI(")
	s = vnniLabel.ReplaceAllString(s, "${1}v:")
	s = vnniJump.ReplaceAllString(s, "${1}${2}v")
	header := "// AVX512-VNNI (with AVX512VL, on 256-bit registers) variants of the AVX2\n" +
		"// kernels in " + name + ", generated from that file by vnniFromAVX2\n" +
		"// (vnni_gen_test.go); do not edit. TestVNNIInStep checks they match.\n"
	return strings.Replace(s, "#include \"textflag.h\"\n", "#include \"textflag.h\"\n\n"+header, 1)
}

// asmLine splits one assembly line into its opcode, operands and whether it
// ends in a macro continuation.
func asmLine(l string) (op string, args []string, cont bool) {
	s := strings.TrimSpace(l)
	if strings.HasSuffix(s, `\`) {
		cont = true
		s = strings.TrimSpace(strings.TrimSuffix(s, `\`))
	}
	if i := strings.Index(s, "//"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	op, rest, _ := strings.Cut(s, " ")
	for _, a := range strings.Split(rest, ",") {
		if a = strings.TrimSpace(a); a != "" {
			args = append(args, a)
		}
	}
	return op, args, cont
}

// asmFormat writes an instruction with the indentation of l.
func asmFormat(l, op string, args []string, cont bool) string {
	indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
	s := indent + op + strings.Repeat(" ", max(1, 13-len(op))) + strings.Join(args, ", ")
	if cont {
		s += ` \`
	}
	return s
}
