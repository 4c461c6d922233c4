package tokenizer

import "fmt"

// A splitter refines a split of the code points cpts: offsets holds the
// lengths of the current chunks (summing to len(cpts)) and the result the
// lengths of the finer chunks. Pre-tokenizers apply their splitters in turn.
type splitter func(cpts []rune, offsets []int) []int

// preTokenizer is what a tokenizer.ggml.pre name selects.
type preTokenizer struct {
	splitters    []splitter
	ignoreMerges bool // a word that is a token is taken whole, without merges
	addBOS       bool // default for tokenizer.ggml.add_bos_token
}

var (
	splitGPT2   = customSplitter(scanGPT2)
	splitLlama3 = customSplitter(scanLlama3)
)

func collapsed(m matcher) splitter { return regexSplitter(m, collapse) }
func literal(m matcher) splitter   { return regexSplitter(m, spaceToVT) }

// deepseekLetters is the letter set of deepseek-llm's second pattern.
var deepseekLetters = inRanges(
	[2]rune{'A', 'Z'}, [2]rune{'a', 'z'}, [2]rune{'µ', 'µ'}, [2]rune{'À', 'Ö'}, [2]rune{'Ø', 'ö'},
	[2]rune{'ø', 'ƺ'}, [2]rune{'Ƽ', 'ƿ'}, [2]rune{'Ǆ', 'ʓ'}, [2]rune{'ʕ', 'ʯ'}, [2]rune{'Ͱ', 'ͳ'},
	[2]rune{'Ͷ', 'ͷ'}, [2]rune{'ͻ', 'ͽ'}, [2]rune{'Ϳ', 'Ϳ'}, [2]rune{'Ά', 'Ά'}, [2]rune{'Έ', 'Ί'},
	[2]rune{'Ό', 'Ό'}, [2]rune{'Ύ', 'Ρ'}, [2]rune{'Σ', 'ϵ'}, [2]rune{'Ϸ', 'ҁ'}, [2]rune{'Ҋ', 'ԯ'},
	[2]rune{'Ա', 'Ֆ'}, [2]rune{'Ⴀ', 'Ⴥ'}, [2]rune{'Ꭰ', 'Ᏽ'}, [2]rune{'ᏸ', 'ᏽ'}, [2]rune{'Ა', 'Ჺ'},
	[2]rune{'Ჽ', 'Ჿ'}, [2]rune{'ᴀ', 'ᴫ'}, [2]rune{'ᵫ', 'ᵷ'}, [2]rune{'ᵹ', 'ᶚ'}, [2]rune{'Ḁ', 'ἕ'},
	[2]rune{'Ἐ', 'Ἕ'}, [2]rune{'ἠ', 'ὅ'}, [2]rune{'Ὀ', 'Ὅ'}, [2]rune{'ὐ', 'ὗ'}, [2]rune{'Ὑ', 'Ὑ'},
	[2]rune{'Ὓ', 'Ὓ'}, [2]rune{'Ὕ', 'Ὕ'}, [2]rune{'Ὗ', '\u1F7D'}, [2]rune{'ᾀ', 'ᾴ'}, [2]rune{'ᾶ', 'ᾼ'},
	[2]rune{'\u1FBE', '\u1FBE'}, [2]rune{'ῂ', 'ῄ'}, [2]rune{'ῆ', 'ῌ'}, [2]rune{'ῐ', '\u1FD3'}, [2]rune{'ῖ', '\u1FDB'},
	[2]rune{'ῠ', 'Ῥ'}, [2]rune{'ῲ', 'ῴ'}, [2]rune{'ῶ', 'ῼ'}, [2]rune{'ℂ', 'ℂ'}, [2]rune{'ℇ', 'ℇ'},
	[2]rune{'ℊ', 'ℓ'}, [2]rune{'ℕ', 'ℕ'}, [2]rune{'ℙ', 'ℝ'}, [2]rune{'ℤ', 'ℤ'}, [2]rune{'\u2126', '\u2126'},
	[2]rune{'ℨ', 'ℨ'}, [2]rune{'\u212A', 'ℭ'}, [2]rune{'ℯ', 'ℴ'}, [2]rune{'ℹ', 'ℹ'}, [2]rune{'ℼ', 'ℿ'},
	[2]rune{'ⅅ', 'ⅉ'}, [2]rune{'ⅎ', 'ⅎ'}, [2]rune{'Ↄ', 'ↄ'}, [2]rune{'Ⰰ', 'ⱻ'}, [2]rune{'Ȿ', 'ⳤ'},
	[2]rune{'Ⳬ', 'ⳮ'}, [2]rune{'Ⳳ', 'ⳳ'}, [2]rune{'Ꙁ', 'ꙭ'}, [2]rune{'Ꚁ', 'ꚛ'}, [2]rune{'Ꜣ', 'ꝯ'},
	[2]rune{'ꝱ', 'ꞇ'}, [2]rune{'Ꞌ', 'ꞎ'}, [2]rune{'ꭰ', 'ꮿ'}, [2]rune{'ﬀ', 'ﬆ'}, [2]rune{'ﬓ', 'ﬗ'},
	[2]rune{'Ａ', 'Ｚ'}, [2]rune{'ａ', 'ｚ'}, [2]rune{'𐐀', '𐑏'}, [2]rune{'𐒰', '𐓓'}, [2]rune{'𐓘', '𐓻'},
	[2]rune{'𐲀', '𐲲'}, [2]rune{'𐳀', '𐳲'}, [2]rune{'𑢠', '𑣟'}, [2]rune{'𞤀', '𞥃'},
)

var (
	// [!-/:-~！-／：-～‘-‟　-。]
	deepseekPunct = inRanges([2]rune{'!', '/'}, [2]rune{':', '~'}, [2]rune{'！', '／'}, [2]rune{'：', '～'},
		[2]rune{'‘', '‟'}, [2]rune{'　', '。'})
	// [一-龥ࠀ-一가-퟿]
	deepseekCJK = inRanges([2]rune{'一', '龥'}, [2]rune{'ࠀ', '一'}, [2]rune{'가', '퟿'})
	// [^(\s|.,!?…。，、।۔،)]
	bloomWord = not(or(reSpace, anyOf("(|.,!?…。，、।۔،)")))
)

// lookupPreTokenizer returns the pre-tokenizer that a tokenizer.ggml.pre
// name selects in llama.cpp's llama-vocab.cpp, or an error naming an
// unsupported one.
func lookupPreTokenizer(name string) (preTokenizer, error) {
	gpt2 := preTokenizer{splitters: []splitter{splitGPT2}}
	qwen2 := preTokenizer{splitters: []splitter{collapsed(qwenStyle{contractions: true, maxDigits: 1, punctNewline: true, newlinePlus: true}.matcher())}}
	starcoder := preTokenizer{splitters: []splitter{collapsed(one(reNumber)), splitGPT2}}
	switch name {
	case "", "default":
		return preTokenizer{splitters: []splitter{
			collapsed(plus(or(rePunct, anyOf("$+<=>^~|")))),
			splitGPT2,
			collapsed(plus(reNumber)),
			literal(digits3),
		}}, nil
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano":
		return preTokenizer{splitters: []splitter{splitLlama3}, ignoreMerges: true, addBOS: true}, nil
	case "dbrx", "smaug-bpe", "glm4", "chatglm-bpe":
		return preTokenizer{splitters: []splitter{splitLlama3}}, nil
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
		"modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais", "trillion",
		"granite-docling", "exaone4":
		return gpt2, nil
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2":
		return qwen2, nil
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2":
		return starcoder, nil
	case "falcon":
		return preTokenizer{splitters: []splitter{
			collapsed(plus(or(rePunct, anyOf("$+<=>^~|`")))),
			splitGPT2,
			literal(digits3),
		}}, nil
	case "deepseek-llm":
		return preTokenizer{splitters: []splitter{
			literal(one(reNewline)),
			literal(optPlus(reSpace, deepseekLetters)),
			literal(optPlus(reSpace, deepseekPunct)),
			splitTrailingSpace,
			literal(plus(deepseekCJK)),
			collapsed(plus(reNumber)),
		}}, nil
	case "deepseek-coder":
		return preTokenizer{splitters: []splitter{
			literal(one(reNewline)),
			collapsed(optPlus(reSpace, reLetter)),
			collapsed(optPlus(reSpace, rePunct)),
			literal(plus(deepseekCJK)),
			collapsed(one(reNumber)),
		}}, nil
	case "bloom", "poro-chat", "gpt3-finnish":
		return preTokenizer{splitters: []splitter{literal(optPlus(anyOf(" "), bloomWord))}}, nil
	case "viking":
		return preTokenizer{splitters: []splitter{literal(optPlus(anyOf(" "), bloomWord)), collapsed(one(reNumber))}}, nil
	case "seed-coder":
		return preTokenizer{splitters: []splitter{collapsed(qwenStyle{contractions: true, maxDigits: 1, newlinePlus: true}.matcher())}}, nil
	case "bailingmoe", "bailingmoe2", "llada-moe":
		return preTokenizer{splitters: []splitter{collapsed(qwenStyle{contractions: true, maxDigits: 1, punctNewline: true}.matcher())}}, nil
	case "ufakzeka":
		return preTokenizer{splitters: []splitter{collapsed(qwenStyle{maxDigits: 1, punctNewline: true, newlinePlus: true}.matcher())}}, nil
	case "gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2":
		return preTokenizer{splitters: []splitter{collapsed(casedStyle{contractions: true, maxDigits: 3}.matcher())}}, nil
	case "tekken":
		return preTokenizer{splitters: []splitter{collapsed(casedStyle{maxDigits: 1}.matcher())}, ignoreMerges: true, addBOS: true}, nil
	case "minicpm5":
		return preTokenizer{splitters: []splitter{
			collapsed(func(c []rune, p, hi int) int {
				if e := runEnd(c, p, min(hi, p+3), reNumber); e > p {
					return e
				}
				return -1
			}),
			collapsed(qwenStyle{contractions: true, punctNewline: true, newlinePlus: true}.matcher()),
		}, ignoreMerges: true}, nil
	}
	return preTokenizer{}, fmt.Errorf("tokenizer: unsupported pre-tokenizer %q", name)
}

// split applies the pre-tokenizer to the code points of a text and returns
// its words.
func (pt *preTokenizer) split(cpts []rune) [][]rune {
	offsets := []int{len(cpts)}
	for _, s := range pt.splitters {
		offsets = s(cpts, offsets)
	}
	words := make([][]rune, 0, len(offsets))
	start := 0
	for _, n := range offsets {
		words = append(words, cpts[start:start+n])
		start += n
	}
	return words
}
