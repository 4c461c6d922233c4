package chat

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// vocabMeta reads from a GGUF file the metadata a chat template needs.
type vocabMeta struct {
	template string
	bos, eos string
}

func readVocabMeta(path string) (vocabMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return vocabMeta{}, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var hdr struct {
		Magic   [4]byte
		Version uint32
		NT, NKV uint64
	}
	if err := binary.Read(r, binary.LittleEndian, &hdr); err != nil {
		return vocabMeta{}, err
	}
	u32 := func() uint32 { var v uint32; binary.Read(r, binary.LittleEndian, &v); return v }
	u64 := func() uint64 { var v uint64; binary.Read(r, binary.LittleEndian, &v); return v }
	str := func() string { b := make([]byte, u64()); io.ReadFull(r, b); return string(b) }
	sizes := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	var tokens []string
	var bosID, eosID int64 = -1, -1
	var m vocabMeta
	for range hdr.NKV {
		key := str()
		typ := u32()
		switch typ {
		case 8:
			s := str()
			if key == "tokenizer.chat_template" {
				m.template = s
			}
		case 9:
			et, n := u32(), u64()
			for range n {
				if et == 8 {
					s := str()
					if key == "tokenizer.ggml.tokens" {
						tokens = append(tokens, s)
					}
				} else {
					r.Discard(sizes[et])
				}
			}
		case 4, 5:
			v := int64(u32())
			switch key {
			case "tokenizer.ggml.bos_token_id":
				bosID = v
			case "tokenizer.ggml.eos_token_id":
				eosID = v
			}
		default:
			n, ok := sizes[typ]
			if !ok {
				return m, fmt.Errorf("type %d", typ)
			}
			r.Discard(n)
		}
	}
	if bosID >= 0 {
		m.bos = tokens[bosID]
	}
	if eosID >= 0 {
		m.eos = tokens[eosID]
	}
	return m, nil
}
