package transport

// MarshalReflect and UnmarshalReflect are the encoding/json forms of a
// message's codec, which the fuzz tests hold equal to the direct ones.
func MarshalReflect(m Message) ([]byte, error) { return m.marshalReflect() }

// UnmarshalReflect decodes b into m with encoding/json alone.
func UnmarshalReflect(m *Message, b []byte) error { return m.unmarshalReflect(b) }
