// A TLS HTTP/2 sink that answers the kubelet fleet's requests as kube-apiserver would,
// at line rate, without a control plane behind it: for measuring the generator past
// what the machine's own plane can serve (cpscale_bench_fleet --sink).
//
//   PUT            200, the body sent, re-serialised in the API types' field order with a
//                  new resourceVersion: a Lease renewal gets the realistic Lease back
//                  (the kubelet PUTs the object the server last returned, managedFields
//                  and all)
//   POST           201, the same with a uid, creationTimestamp and managedFields added
//                  (a Lease); anything else gets a uid and a resourceVersion spliced in
//   PATCH          200, a small object of the path's kind with a new resourceVersion
//   DELETE         200, a Status Success
//   GET ?watch=    200 and the stream held open, no events (a quiet cluster)
//   GET list       200, an empty list with a resourceVersion
//   GET other      404, a Status NotFound
//
// One thread, epoll, OpenSSL and libnghttp2. Listens on 127.0.0.1 only.
//
//   cpscale_h2_sink --cert CERT.pem --key KEY.pem [--port P]
// prints "listening on <port>" on stdout once it accepts, then serves until SIGTERM.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>

namespace {

volatile sig_atomic_t stopping = 0;
std::uint64_t revision = 1000;  // the sink's resourceVersion counter
std::uint64_t uids = 0;

// A new object's uid, as a UUID.
std::string nextUid() {
  char uid[40];
  std::snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012llx", static_cast<unsigned long long>(++uids));
  return uid;
}

struct Stream {
  std::string method, path, body, response;
  std::size_t sent = 0;
  int status = 200;
  bool hold = false;  // a watch: headers only, then nothing
};

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  nghttp2_session* session = nullptr;
  std::string out;  // TLS bytes nghttp2 produced that the socket has not taken yet
  bool closing = false;
  ~Conn() {
    if (session) nghttp2_session_del(session);
    if (ssl) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }
};

using Object = nlohmann::ordered_json;

// The object as kube-apiserver writes it back: fields in the order of the Go types
// (kind, apiVersion, metadata with name, namespace, uid, resourceVersion and
// creationTimestamp first, then spec, status), with a new resourceVersion. On creation
// also what the server adds: a uid, the creation time and the creating manager's
// managedFields entry (the kubelet's, for a Lease), so that what the client caches and
// sends back is as large and as ordered as a real object. Empty if not a JSON object.
std::string asServerWrites(const std::string& body, std::uint64_t rv, bool created) {
  Object in = Object::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) return {};
  Object meta = in.contains("metadata") && in["metadata"].is_object() ? in["metadata"] : Object::object();
  if (created) {
    meta["uid"] = nextUid();
    meta["creationTimestamp"] = "2026-01-01T00:00:00Z";
    meta["managedFields"] = Object::parse(
        R"([{"manager":"kubelet","operation":"Update","apiVersion":"coordination.k8s.io/v1","time":"2026-01-01T00:00:00Z",)"
        R"("fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:ownerReferences":{".":{},)"
        R"("k:{\"uid\":\"00000000-0000-4000-8000-000000000000\"}":{}}},"f:spec":{"f:holderIdentity":{},)"
        R"("f:leaseDurationSeconds":{},"f:renewTime":{}}}}])");
  }
  meta["resourceVersion"] = std::to_string(rv);
  Object m = Object::object();
  for (const char* k :
       {"name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "labels",
        "annotations", "ownerReferences", "finalizers", "managedFields"}) {
    if (auto it = meta.find(k); it != meta.end()) m[k] = *it;
  }
  for (auto& [k, v] : meta.items())
    if (!m.contains(k)) m[k] = v;
  Object out = Object::object();
  for (const char* k : {"kind", "apiVersion"})
    if (auto it = in.find(k); it != in.end()) out[k] = *it;
  out["metadata"] = std::move(m);
  for (auto& [k, v] : in.items())
    if (!out.contains(k)) out[k] = v;
  return out.dump();
}

std::string lastSegment(const std::string& path, std::size_t skipFromEnd) {
  std::string p = path.substr(0, path.find('?'));
  for (std::size_t i = 0; i < skipFromEnd; ++i) p = p.substr(0, p.rfind('/'));
  return p.substr(p.rfind('/') + 1);
}

void answer(Stream& s) {
  const std::uint64_t rv = ++revision;
  const bool query = s.path.find('?') != std::string::npos;
  if (s.method == "PUT" || s.method == "POST") {
    s.status = s.method == "POST" ? 201 : 200;
    if (s.path.find("/leases") != std::string::npos) {
      s.response = asServerWrites(s.body, rv, s.method == "POST");
    } else {
      // Anything else (a 12 KB Node) only needs a uid and a resourceVersion: spliced
      // in, so that registering nodes by the thousand costs the sink little.
      s.response = std::move(s.body);
      const std::size_t at = s.response.find(R"("metadata":{)");
      if (at != std::string::npos) {
        s.response.insert(at + 12, R"("uid":")" + nextUid() + R"(","resourceVersion":")" + std::to_string(rv) +
                                       (s.response[at + 12] == '}' ? "\"" : "\","));
      }
    }
    if (s.response.empty()) {
      s.status = 400;
      s.response = R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400})";
    }
  } else if (s.method == "PATCH") {
    // .../nodes/<name>/status: the object's name is one segment up.
    const bool sub = s.path.size() > 7 && s.path.compare(s.path.size() - 7, 7, "/status") == 0;
    s.response = R"({"kind":"Object","apiVersion":"v1","metadata":{"name":")" + lastSegment(s.path, sub ? 1 : 0) +
                 R"(","resourceVersion":")" + std::to_string(rv) + R"("}})";
  } else if (s.method == "DELETE") {
    s.response = R"({"kind":"Status","apiVersion":"v1","status":"Success"})";
  } else if (query && (s.path.find("watch=true") != std::string::npos || s.path.find("watch=1") != std::string::npos)) {
    s.hold = true;
  } else if (s.method == "GET" && lastSegment(s.path, 0).find('.') == std::string::npos &&
             (query || s.path.back() == 's')) {
    // A collection (the last segment is a plural resource): an empty list.
    s.response = R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":")" + std::to_string(rv) +
                 R"("},"items":[]})";
  } else {
    s.status = 404;
    s.response = R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})";
  }
}

ssize_t readBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags, nghttp2_data_source* src,
                 void*) {
  auto* s = static_cast<Stream*>(src->ptr);
  if (s->hold) return NGHTTP2_ERR_DEFERRED;
  const std::size_t n = std::min(length, s->response.size() - s->sent);
  std::memcpy(buf, s->response.data() + s->sent, n);
  s->sent += n;
  if (s->sent == s->response.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int respond(nghttp2_session* session, int32_t id, Stream& s) {
  answer(s);
  const std::string status = std::to_string(s.status);
  const std::string length = std::to_string(s.response.size());
  auto nv = [](const char* n, const std::string& v) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n)),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), std::strlen(n), v.size(),
                      NGHTTP2_NV_FLAG_NO_COPY_NAME};
  };
  static const std::string json = "application/json";
  nghttp2_nv headers[] = {nv(":status", status), nv("content-type", json), nv("content-length", length)};
  nghttp2_data_provider provider{};
  provider.source.ptr = &s;
  provider.read_callback = readBody;
  return nghttp2_submit_response(session, id, headers, s.hold ? 2 : 3, &provider);
}

int onBeginHeaders(nghttp2_session* session, const nghttp2_frame* frame, void*) {
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, new Stream);
  return 0;
}

int onHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
             const uint8_t* value, size_t valuelen, uint8_t, void*) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
  if (!s) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  if (n == ":method")
    s->method.assign(reinterpret_cast<const char*>(value), valuelen);
  else if (n == ":path")
    s->path.assign(reinterpret_cast<const char*>(value), valuelen);
  return 0;
}

int onData(nghttp2_session* session, uint8_t, int32_t id, const uint8_t* data, size_t len, void*) {
  if (auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id)))
    s->body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int onFrame(nghttp2_session* session, const nghttp2_frame* frame, void*) {
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    if (auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id)))
      return respond(session, frame->hd.stream_id, *s);
  }
  return 0;
}

int onClose(nghttp2_session* session, int32_t id, uint32_t, void*) {
  delete static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  nghttp2_session_set_stream_user_data(session, id, nullptr);
  return 0;
}

int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
               void*) {
  unsigned char* o = nullptr;
  if (nghttp2_select_next_protocol(&o, outlen, in, inlen) != 1) return SSL_TLSEXT_ERR_NOACK;
  *out = o;
  return SSL_TLSEXT_ERR_OK;
}

// Moves what nghttp2 wants to send through TLS; false once the connection is done.
bool flush(Conn& c) {
  for (;;) {
    while (c.out.size() < 256 * 1024) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(c.session, &data);
      if (n < 0) return false;
      if (n == 0) break;
      c.out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    if (c.out.empty()) break;
    const int w = SSL_write(c.ssl, c.out.data(), static_cast<int>(c.out.size()));
    if (w <= 0) {
      const int e = SSL_get_error(c.ssl, w);
      return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ;
    }
    c.out.erase(0, static_cast<std::size_t>(w));
  }
  return nghttp2_session_want_read(c.session) || nghttp2_session_want_write(c.session);
}

bool readable(Conn& c) {
  char buf[64 * 1024];
  for (;;) {
    const int n = SSL_read(c.ssl, buf, sizeof buf);
    if (n <= 0) {
      const int e = SSL_get_error(c.ssl, n);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
      return false;
    }
    if (!c.session) return false;
    if (nghttp2_session_mem_recv(c.session, reinterpret_cast<uint8_t*>(buf), static_cast<std::size_t>(n)) < 0)
      return false;
  }
  return true;
}

nghttp2_session_callbacks* callbacks() {
  static nghttp2_session_callbacks* cb = [] {
    nghttp2_session_callbacks* c = nullptr;
    nghttp2_session_callbacks_new(&c);
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, onBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(c, onHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, onData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, onFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, onClose);
    return c;
  }();
  return cb;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cert, key;
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--cert")
      cert = argv[i + 1];
    else if (k == "--key")
      key = argv[i + 1];
    else if (k == "--port")
      port = std::stoi(argv[i + 1]);
    else {
      std::cerr << "cpscale_h2_sink: unknown option " << k << "\n";
      return 2;
    }
  }
  if (cert.empty() || key.empty()) {
    std::cerr << "usage: cpscale_h2_sink --cert CERT.pem --key KEY.pem [--port P]\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = [](int) { stopping = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) {
    std::cerr << "cpscale_h2_sink: cannot load " << cert << " / " << key << "\n";
    return 3;
  }
  SSL_CTX_set_alpn_select_cb(ctx, selectAlpn, nullptr);

  const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  const int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(lfd, 128) != 0) {
    std::perror("cpscale_h2_sink: bind");
    return 3;
  }
  socklen_t len = sizeof a;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::cout << "listening on " << ntohs(a.sin_port) << std::endl;

  const int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};

  epoll_event events[64];
  while (!stopping) {
    const int n = epoll_wait(ep, events, 64, 200);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        for (;;) {
          const int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK);
          if (fd < 0) break;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          auto c = std::make_unique<Conn>();
          c->fd = fd;
          c->ssl = SSL_new(ctx);
          SSL_set_fd(c->ssl, fd);
          SSL_set_accept_state(c->ssl);
          nghttp2_session_server_new(&c->session, callbacks(), c.get());
          nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 1);
          epoll_event cev{};
          cev.events = EPOLLIN | EPOLLOUT | EPOLLET;
          cev.data.ptr = c.get();
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
          conns.emplace(fd, std::move(c));
        }
        continue;
      }
      Conn& c = *static_cast<Conn*>(events[i].data.ptr);
      bool ok = !(events[i].events & (EPOLLERR | EPOLLHUP));
      if (ok) ok = readable(c);
      if (ok) ok = flush(c);
      if (!ok) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
        conns.erase(c.fd);
      }
    }
  }
  conns.clear();
  ::close(lfd);
  SSL_CTX_free(ctx);
  return 0;
}
