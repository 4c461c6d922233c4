package grammar

// The building blocks of JSON grammars. Values carry no whitespace of
// their own: containers put ws after each value, and a grammar's root is
// the bare value, so that only an end token may follow it.
var jsonRules = map[string]struct {
	body string
	deps []string
}{
	"ws":       {`| " " | "\n" [ \t]{0,20}`, nil},
	"boolean":  {`"true" | "false"`, nil},
	"null":     {`"null"`, nil},
	"integral": {`"0" | [1-9] [0-9]{0,15}`, nil},
	"integer":  {`"-"? integral`, []string{"integral"}},
	"number":   {`"-"? integral ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?`, []string{"integral"}},
	"char":     {`[^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )`, nil},
	"string":   {`"\"" char* "\""`, []string{"char"}},
	"value":    {`object | array | string | number | boolean | null`, []string{"object", "array", "string", "number", "boolean", "null"}},
	"object":   {`"{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"`, []string{"ws", "string", "value"}},
	"array":    {`"[" ws ( value ws ( "," ws value ws )* )? "]"`, []string{"ws", "value"}},

	"date":      {`[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] )`, nil},
	"time":      {`( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`, nil},
	"date-time": {`date "T" time`, []string{"date", "time"}},
	"uuid":      {`hex{8} "-" hex{4} "-" hex{4} "-" hex{4} "-" hex{12}`, []string{"hex"}},
	"hex":       {`[0-9a-fA-F]`, nil},

	"date-string":      {`"\"" date "\""`, []string{"date"}},
	"time-string":      {`"\"" time "\""`, []string{"time"}},
	"date-time-string": {`"\"" date-time "\""`, []string{"date-time"}},
	"uuid-string":      {`"\"" uuid "\""`, []string{"uuid"}},
}

// stringFormats maps the formats a string schema may name to their rules.
var stringFormats = map[string]string{
	"date": "date-string", "time": "time-string", "date-time": "date-time-string", "uuid": "uuid-string",
}

// JSONObjectGBNF is the grammar of response_format json_object: any JSON
// object.
const JSONObjectGBNF = `root ::= object
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
value ::= object | array | string | number | ("true" | "false" | "null")
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
ws ::= | " " | "\n" [ \t]{0,20}
`
