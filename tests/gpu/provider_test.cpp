// The CUDA device provider and the backend's error types: without a device the
// provider resolves to none with a reason (the engine then runs on the CPU); with
// devices it resolves "cuda" to all of them and rejects an index that does not exist.
#include <gtest/gtest.h>

#include "gpu/devices.hpp"
#include "gpu/errors.hpp"
#include "gpu/provider.hpp"

namespace fathom::test {
namespace {

TEST(GpuProvider, ResolvesTheDevicesPresentOrSaysWhyNone) {
    const auto provider = gpu::make_device_provider();
    const auto query = gpu::query_devices();
    const auto all = provider->resolve(DeviceSpec::parse("cuda"));
    const auto first = provider->resolve(DeviceSpec::parse("cuda:0"));
    const auto missing = provider->resolve(DeviceSpec::parse("cuda:0,97"));
    if (query.devices.empty()) {
        EXPECT_TRUE(all.devices.empty());
        EXPECT_TRUE(first.devices.empty());
        EXPECT_FALSE(all.reason.empty());
        EXPECT_EQ(first.reason, query.message);
    } else {
        EXPECT_EQ(all.devices.size(), query.devices.size());
        EXPECT_EQ(first.devices, std::vector<int>{0});
        EXPECT_TRUE(first.reason.empty());
    }
    EXPECT_TRUE(missing.devices.empty()) << "one listed device does not exist";
    EXPECT_FALSE(missing.reason.empty());
    if (!query.devices.empty()) {
        EXPECT_NE(missing.reason.find("cuda:97"), std::string::npos) << missing.reason;
    }
}

TEST(GpuErrors, NameTheCallStatusAndPlaceAndDeriveFromTheCoreDeviceErrors) {
    const gpu::CudaError error("cublasDsyrk(handle, ...)", "CUBLAS_STATUS_EXECUTION_FAILED", 13, "gpu/CudaBackend.cpp", 210,
                               "cuda:1");
    const std::string text = error.what();
    for (const char* part : {"cuda:1", "cublasDsyrk", "CUBLAS_STATUS_EXECUTION_FAILED", "(13)", "gpu/CudaBackend.cpp:210"})
        EXPECT_NE(text.find(part), std::string::npos) << part << " in " << text;
    EXPECT_EQ(error.code(), 13);
    EXPECT_EQ(error.line(), 210);
    const DeviceError& as_core = error;
    EXPECT_STREQ(as_core.what(), text.c_str());

    const gpu::OutOfMemory oom("cuda:0", std::int64_t{3} << 30, "cudaMalloc");
    EXPECT_EQ(oom.requested_bytes(), std::int64_t{3} << 30);
    EXPECT_NE(std::string(oom.what()).find("GPU out of memory"), std::string::npos);
    EXPECT_NE(std::string(oom.what()).find("3072 MiB"), std::string::npos) << oom.what();
    EXPECT_NO_THROW(static_cast<void>(dynamic_cast<const DeviceOutOfMemory&>(static_cast<const std::exception&>(oom))));
}

}  // namespace
}  // namespace fathom::test
