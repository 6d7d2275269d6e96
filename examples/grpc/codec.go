package main

import "encoding/json"

// jsonCodec encodes messages as JSON. It is both a gRPC codec
// (google.golang.org/grpc/encoding) and a Connect one: the two interfaces
// have the same methods. The example uses it so that it needs no protoc
// step; a real service would use protobuf, which works the same way.
type jsonCodec struct{}

func (jsonCodec) Name() string                       { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
