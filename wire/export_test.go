package wire

// DecodeReportReflect is DecodeReport by encoding/json alone, which the
// fuzz tests hold equal to the direct decoder.
func DecodeReportReflect(data []byte) (Report, error) {
	if err := checkReportBytes(data); err != nil {
		return Report{}, err
	}
	return decodeReportReflect(data)
}
