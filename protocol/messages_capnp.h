// Conversions between messages and their Cap'n Proto form for the files
// that embed one: the learner checkpoint holds the measurement cache as the
// MeasurementCache struct workers receive. The codec converts with the same
// functions, so a cache reads back the same from a frame and from a file.
#pragma once

#include "protocol/messages.h"
#include "tensortier.capnp.h"

namespace tensortier {

void MeasurementsToCapnp(const MeasurementCacheMsg& m, schema::MeasurementCache::Builder out);
MeasurementCacheMsg MeasurementsFromCapnp(schema::MeasurementCache::Reader in);

}  // namespace tensortier
