// Package grammar constrains generation to a formal language: it parses
// llama.cpp's GBNF grammars, translates JSON schemas into them, and
// matches text against them with a pushdown automaton over bytes.
//
// A Grammar is compiled once from its text. The automaton's state is a
// set of stacks of grammar positions, interned so that equal stacks are
// equal ids and a state hashes the same in every matcher; tail calls do
// not grow a stack, so repetitions run in constant depth. Characters are
// matched as UTF-8, byte by byte.
//
// An Engine joins a Grammar to a Vocab (a trie of the tokens' bytes) and
// keeps what masks cost, shared by every Matcher made from it: per stack
// top (its top few nodes), the tokens accepted whatever lies below and
// the few trie nodes where the rest of the stack decides, computed once
// by walking the trie; and per automaton state, the finished mask, so
// most steps are a lookup and a copy. Walks step through a cache of byte
// transitions between states, a lookup per trie node.
//
// A Matcher follows one sequence: Allowed fills the bitmask of tokens
// that may come next (end tokens where the grammar may end, and only
// they once nothing else may follow), Accept advances by one token.
//
// Every input gives a result or an error: bad grammars fail with their
// line and column, left recursion is refused, and the automaton's state
// size, each expansion and each mask's walk are bounded, so a hostile
// grammar fails clearly instead of hanging or exhausting memory.
package grammar
