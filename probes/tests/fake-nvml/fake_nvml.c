/* A stand-in libnvidia-ml.so.1 for tests on machines without a GPU (labelled
 * hand-made: the values are chosen to exercise the recorder, not copied from a
 * machine). Two GPUs: GPU 0 answers, with two NVLinks to an NVSwitch; GPU 1
 * has fallen off the bus. Functions not defined here are missing symbols,
 * which the recorder must write down as "not supported". */
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
enum { OK = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, GPU_IS_LOST = 15, ARGUMENT_VERSION_MISMATCH = 25 };

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned version;
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned cliqueId;
    unsigned char state;
    unsigned healthMask;
    unsigned char healthSummary;
} nvmlGpuFabricInfo_v3_t;

static int gpu0;

nvmlReturn_t nvmlInit_v2(void) { return OK; }
nvmlReturn_t nvmlShutdown(void) { return OK; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *out, unsigned length) {
    strncpy(out, "999.12.34", length);
    return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    *count = 2;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device) {
    if (index == 1) return GPU_IS_LOST;
    if (index != 0) return INVALID_ARGUMENT;
    *device = &gpu0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *out, unsigned length) {
    strncpy(out, "Fake H100", length);
    return OK;
}

static void pci(nvmlPciInfo_t *info, unsigned bus, const char *id) {
    memset(info, 0, sizeof *info);
    info->bus = bus;
    strcpy(info->busId, id);
    strncpy(info->busIdLegacy, id + 4, sizeof info->busIdLegacy - 1);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *info) {
    pci(info, 0x1a, "00000000:1A:00.0");
    return OK;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned *value) {
    *value = 5;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned *value) { return NOT_SUPPORTED; }

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned link, int *active) {
    if (link > 1) return INVALID_ARGUMENT;
    *active = 1;
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned link, unsigned *version) {
    *version = 4;
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned link, nvmlPciInfo_t *info) {
    pci(info, 0xf3, "00000000:F3:00.0");
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned link, int *type) {
    *type = 2; /* NVML_NVLINK_DEVICE_TYPE_SWITCH */
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned link, int counter,
                                             unsigned long long *value) {
    *value = link == 1 && counter == 0 ? 42 : 0; /* DL replay on link 1 */
    return OK;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned *corrected, unsigned *uncorrected,
                                       unsigned *pending, unsigned *failed) {
    *corrected = 3;
    *uncorrected = 1;
    *pending = 1;
    *failed = 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons) {
    *reasons = 0x40; /* HW thermal slowdown */
    return OK;
}

/* Answers only struct version 2, as drivers before the v3 layout do. */
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfo_v3_t *info) {
    if (info->version >> 24 != 2) return ARGUMENT_VERSION_MISMATCH;
    memset(info->clusterUuid, 0, 16);
    info->clusterUuid[0] = 0xab;
    info->clusterUuid[15] = 0x01;
    info->status = OK;
    info->cliqueId = 7;
    info->state = 3; /* completed */
    return OK;
}
