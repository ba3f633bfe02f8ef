// Package a2aserver serves Baton's workflows as A2A (Agent2Agent) agents:
// every workflow an agent at /a2a/{workflow}, with its agent card at
// /a2a/{workflow}/.well-known/agent-card.json and JSON-RPC 2.0 on POST in
// both protocol versions, 1.0 (SendMessage, SendStreamingMessage, GetTask,
// CancelTask, SubscribeToTask) and 0.3 (message/send, message/stream,
// tasks/get, tasks/cancel, tasks/resubscribe).
//
// It is a front door over the operations layer (package ops), like the
// HTTP API: a message without a task id starts an instance, a message with
// one signals it, and the task an A2A client sees is the instance, its id
// and context id the instance's id.
//
// The life of a message: the body is decoded (decodeRequest), its dialect
// told by the method's name; a start's instance id is derived from the
// workflow and the message's messageId, so that a message sent again (a
// client retrying after a lost answer) is the same start and answers the
// same task; the handler then follows the instance through the
// operations layer's events until it is finished or waits for a signal
// (input-required), at most MaxWait, and answers the task.
package a2aserver
