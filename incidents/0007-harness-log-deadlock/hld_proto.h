/* hld_proto: incident 0007's wire and log formats, shared by the worker program and the lab (a spec, no code). */
#ifndef HLD_PROTO_H
#define HLD_PROTO_H

/* Philox stream of the payload bytes: byte i is byte (i % 4) (little end first) of word i / 4. */
#define HLD_STREAM_PAYLOAD 0x0007b001u
/* Philox stream of a case's size draw (word 0). */
#define HLD_STREAM_SIZE 0x0007b002u

/* The message the worker sends on its socket (and logs): JSON with the payload in standard base64
 * (RFC 4648 alphabet, '=' padding). Arguments: seed, payload bytes, the base64 text. */
#define HLD_MSG_FMT "{\"op\":\"params\",\"seed\":%llu,\"payload_bytes\":%zu,\"payload\":\"%s\"}"

/* The log line the worker writes to stdout before it sends: this prefix (argument: message bytes), then
 * the whole message (the old logger; also the new one with verbose on) or its first HLD_PREVIEW_CHARS
 * characters and HLD_PREVIEW_TAIL (the new logger's default), then `pad` '.' characters (a lab knob for
 * byte-exact threshold studies, 0 in replays) and a newline. One write() per line. */
#define HLD_LOG_PREFIX_FMT "tcp_stream: send %zu bytes: "
#define HLD_PREVIEW_CHARS 200
#define HLD_PREVIEW_TAIL "..."

/* On the socket: the message length as 8 bytes, little-endian, then the message. */
#define HLD_FRAME_HEADER 8
/* Largest message a parent accepts (a corrupt header is an error, not an allocation). */
#define HLD_MAX_MESSAGE (64u << 20)

/* Worker exit codes: 0 sent, 2 bad arguments, 3 a system call failed (named on stderr). */
#define HLD_WORKER_EXIT_USAGE 2
#define HLD_WORKER_EXIT_SYS 3

#endif
