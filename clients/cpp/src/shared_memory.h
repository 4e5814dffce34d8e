// Same-host transfer of a request's arrays (SharedFile in warpdp.proto; the protocol of
// warpdp/grpc/_shm_protocol.py): the arrays go into a sealed memfd handed to the server over its
// Unix socket, and the request carries only the memfd's handle and the arrays' sizes.
#ifndef WARPDP_SHARED_MEMORY_H
#define WARPDP_SHARED_MEMORY_H

#include <google/protobuf/message.h>

#include <mutex>
#include <string>

namespace wd {

// A connection to a server's shared-memory socket (one registration at a time).
class SharedMemory {
public:
    explicit SharedMemory(std::string socket_name) : socket_name_(std::move(socket_name)) {}
    ~SharedMemory();
    SharedMemory(const SharedMemory &) = delete;
    SharedMemory &operator=(const SharedMemory &) = delete;

    // Moves the bytes fields of `packed` (a request's packed-arrays message) into a new memfd,
    // registers it and fills `request`'s shared_file; returns the handle to release after the
    // reply, or "" (request untouched) when the memfd or its registration failed: the caller
    // then sends the arrays in the message.
    std::string share(google::protobuf::Message &request, google::protobuf::Message &packed);
    void release(const std::string &handle);

private:
    bool ask(const std::string &message, int fd, std::string *answer);

    std::string socket_name_;
    std::mutex lock_;
    int socket_ = -1;
};

// Requests whose arrays hold at least this many bytes go through shared memory.
constexpr size_t SHARED_MIN_BYTES = 64 * 1024;

// Whether a gRPC target names this host (loopback address, localhost or a Unix socket).
bool is_local_target(const std::string &target);

}  // namespace wd

#endif
