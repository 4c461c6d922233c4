package grammar

import "fmt"

// SyntaxError is a fault in a grammar's text, with where it is.
type SyntaxError struct {
	Line, Column int    // 1-based; the column counts bytes
	Msg          string // what is wrong
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// position turns a byte offset of src into a line and a column.
func position(src string, off int) (line, col int) {
	line, col = 1, 1
	for i := 0; i < off && i < len(src); i++ {
		if src[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
