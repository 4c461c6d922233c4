// Package grammar constrains generation to a formal language: it parses
// llama.cpp's GBNF grammars, translates JSON schemas into them, and
// matches text against them with a pushdown automaton over bytes.
//
// A Grammar is compiled once from its text. An Engine joins a Grammar to a
// vocabulary (a trie of the tokens' bytes) and keeps the token masks it has
// computed, shared by every Matcher made from it. A Matcher follows one
// sequence: Allowed fills the bitmask of tokens that may come next, Accept
// advances by one token. Masks are cheap because of two caches: per
// grammar position, the tokens that are accepted whatever the rest of the
// stack holds (computed once by walking the whole trie), and per automaton
// state, the finished mask (so most steps are a lookup and a copy).
//
// Every input gives a result or an error: bad grammars fail with their line
// and column, and the automaton's state size and the work of each step are
// bounded, so a hostile grammar cannot hang or exhaust memory.
package grammar
