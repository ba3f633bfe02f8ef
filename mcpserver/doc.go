// Package mcpserver serves Baton's workflows as Model Context Protocol
// tools, so that an MCP client (a desktop assistant, an IDE, an agent) can
// start, follow, signal and cancel instances.
//
// A Server is a thin front door over a Backend, the operations layer's
// shape: Local adapts an *ops.Ops (the server's own, behind /mcp over
// streamable HTTP), and wfrun mcp adapts the HTTP API of a running server
// (over stdio). Each workflow served is a tool start_<workflow> whose input
// schema is the workflow's input declaration; get_instance,
// list_instances, signal_instance, cancel_instance and list_workflows
// answer the same JSON as the HTTP API, as structured content and as
// text. A refusal is a tool result with isError set, whose text is the
// HTTP API's error object: its code, message and field.
//
// The workflows' YAML, the instances and their histories are resources
// (baton://workflows/{name}, baton://instances/{id},
// baton://instances/{id}/history). When the workflows served change, the
// owner calls WorkflowsChanged: the tools follow and the connected
// clients hear notifications/tools/list_changed.
package mcpserver
