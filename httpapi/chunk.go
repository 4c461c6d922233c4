package httpapi

import "strconv"

// jsonAppender is a value that appends its own JSON to dst, byte for byte
// what encoding/json writes for it. The streamed token chunks are such
// values, so that a token costs no reflection.
type jsonAppender interface {
	appendJSON(dst []byte) []byte
}

// chunkHead returns the start that every chunk of one stream shares:
// {"id":…,"object":…,"created":…,"model":…,"choices":[
func chunkHead(id, object string, created int64, model string) []byte {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, model)
	return append(b, `,"choices":[`...)
}

// textChunk is a streamed completion chunk of one choice without
// logprobs: a completionResponse with that one completionChoice.
type textChunk struct {
	head   []byte  // from chunkHead
	text   string  // the choice's text
	index  int     // the choice's prompt index
	finish *string // finish_reason; nil writes null
}

func (c *textChunk) appendJSON(dst []byte) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, `{"text":`...)
	dst = appendJSONString(dst, c.text)
	dst = append(dst, `,"index":`...)
	dst = strconv.AppendInt(dst, int64(c.index), 10)
	dst = append(dst, `,"logprobs":null,"finish_reason":`...)
	dst = appendNullable(dst, c.finish)
	return append(dst, `}]}`...)
}

// deltaChunk is a streamed chat chunk without logprobs: a chatResponse
// whose one chatChoice has a delta holding at most some content.
type deltaChunk struct {
	head    []byte  // from chunkHead
	index   int     // the choice's index
	content string  // the delta's content; "" leaves it out
	finish  *string // finish_reason; nil writes null
}

func (c *deltaChunk) appendJSON(dst []byte) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(c.index), 10)
	dst = append(dst, `,"delta":{`...)
	if c.content != "" {
		dst = append(dst, `"content":`...)
		dst = appendJSONString(dst, c.content)
	}
	dst = append(dst, `},"logprobs":null,"finish_reason":`...)
	dst = appendNullable(dst, c.finish)
	return append(dst, `}]}`...)
}

// appendNullable appends s as a JSON string, or null when s is nil.
func appendNullable(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *s)
}
