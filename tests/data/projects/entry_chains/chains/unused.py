class Helper:
    def close(self):
        try:
            self.flush()
        except KeyboardInterrupt:  # near miss: nothing reaches it from an entrypoint
            print("flush skipped")

    def flush(self):
        pass
