package grammar

// Grammars of the kinds in llama.cpp's grammars/ folder, written for
// these tests.

const arithmeticGBNF = `
# integer arithmetic with precedence
root  ::= expr
expr  ::= term (ws [-+] ws term)*
term  ::= factor (ws [*/] ws factor)*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+
ws    ::= [ ]*
`

const jsonGBNF = `
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
`

const listGBNF = `
root ::= item+
item ::= "- " [^\n]+ "\n"
`

const cLikeGBNF = `
root      ::= (decl ws)+
decl      ::= type " " ident "(" params? ")" ws "{" ws stmt* "}"
type      ::= "int" | "void" | "char" "*"?
params    ::= type " " ident ("," " "? type " " ident)*
stmt      ::= ( "return" (" " expr)? ";" | ident " = " expr ";" | type " " ident ";" ) ws
expr      ::= operand (" " [-+*/<>] " " operand)*
operand   ::= ident | [0-9]+ | ident "(" (expr ("," " "? expr)*)? ")"
ident     ::= [a-zA-Z_] [a-zA-Z_0-9]{0,30}
ws        ::= [ \t\n]*
`
