// The client half of same-host shared memory (see shared_memory.h and warpdp/grpc/_shm_client.py).
#include "shared_memory.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace wd {

namespace {

// The memfd's bytes, mapped while they are written.
bool fill_memfd(int fd, const std::vector<std::string> &arrays, size_t total)
{
    const size_t capacity = total == 0 ? 1 : total;
    if (posix_fallocate(fd, 0, off_t(capacity)) != 0)
        return false;
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        return false;
    void *map = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return false;
    size_t at = 0;
    for (const std::string &a : arrays) {
        std::memcpy(static_cast<char *>(map) + at, a.data(), a.size());
        at += a.size();
    }
    munmap(map, capacity);
    return true;
}

}  // namespace

SharedMemory::~SharedMemory()
{
    if (socket_ >= 0)
        close(socket_);
}

bool SharedMemory::ask(const std::string &message, int fd, std::string *answer)
{
    if (socket_ < 0) {
        socket_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        if (socket_ < 0 || socket_name_.size() + 1 > sizeof address.sun_path)
            return false;
        std::memcpy(address.sun_path + 1, socket_name_.data(), socket_name_.size());  // abstract: a NUL first
        const socklen_t length = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + socket_name_.size());
        timeval timeout{30, 0};
        setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        if (connect(socket_, reinterpret_cast<sockaddr *>(&address), length) != 0) {
            close(socket_);
            socket_ = -1;
            return false;
        }
    }
    iovec part{const_cast<char *>(message.data()), message.size()};
    msghdr header{};
    header.msg_iov = &part;
    header.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd >= 0) {
        header.msg_control = control;
        header.msg_controllen = sizeof control;
        cmsghdr *c = CMSG_FIRSTHDR(&header);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    char reply[1024];
    ssize_t got = -1;
    if (sendmsg(socket_, &header, MSG_NOSIGNAL) == ssize_t(message.size()))
        got = recv(socket_, reply, sizeof reply, 0);
    if (got <= 0) {  // a late answer would pass for the next request's: the connection is done
        close(socket_);
        socket_ = -1;
        return false;
    }
    *answer = std::string(reply, size_t(got));
    return true;
}

std::string SharedMemory::share(google::protobuf::Message &request, google::protobuf::Message &packed)
{
    const google::protobuf::Descriptor *d = packed.GetDescriptor();
    const google::protobuf::Reflection *r = packed.GetReflection();
    std::vector<std::string> arrays;
    size_t total = 0;
    for (int i = 0; i < d->field_count(); i++) {  // declared in field-number order
        arrays.push_back(r->GetString(packed, d->field(i)));
        total += arrays.back().size();
    }
    if (total < SHARED_MIN_BYTES)
        return "";
    const int fd = memfd_create("warpdp-shared", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return "";
    std::string answer;
    bool registered = false;
    if (fill_memfd(fd, arrays, total)) {
        std::lock_guard<std::mutex> hold(lock_);
        registered = ask("register", fd, &answer);
    }
    close(fd);  // the server holds its own descriptor once registered
    if (!registered || answer.compare(0, 3, "ok ") != 0 || answer.size() != 3 + 32)
        return "";
    const std::string handle = answer.substr(3);
    google::protobuf::Message *shared =
        request.GetReflection()->MutableMessage(&request, request.GetDescriptor()->FindFieldByName("shared_file"));
    const google::protobuf::Descriptor *sd = shared->GetDescriptor();
    const google::protobuf::Reflection *sr = shared->GetReflection();
    for (const std::string &a : arrays)
        sr->AddUInt64(shared, sd->FindFieldByName("sizes"), a.size());
    sr->SetString(shared, sd->FindFieldByName("handle"), handle);
    packed.Clear();
    return handle;
}

void SharedMemory::release(const std::string &handle)
{
    std::string answer;
    std::lock_guard<std::mutex> hold(lock_);
    ask("unregister " + handle, -1, &answer);  // a lost connection drops the memfd anyway
}

bool is_local_target(const std::string &target)
{
    if (target.rfind("unix:", 0) == 0 || target.rfind("unix-abstract:", 0) == 0)
        return true;
    std::string address = target;
    for (const char *scheme : {"ipv4:", "ipv6:", "dns:///", "dns:"})
        if (address.rfind(scheme, 0) == 0) {
            address = address.substr(std::strlen(scheme));
            break;
        }
    std::string host = address[0] == '[' ? address.substr(1, address.find(']') - 1)
                                         : address.substr(0, address.rfind(':'));
    if (host == "localhost")
        return true;
    in_addr v4;
    in6_addr v6;
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace wd
