# The decode-limit tests craft their files with libjpeg (progressive JPEGs; loom's encoder
# writes baseline files only) and zlib (compressed PNG chunks) themselves.
set(_room_links JPEG::JPEG ZLIB::ZLIB)
