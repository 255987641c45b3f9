-- The review inbox (issue 35): the attempts waiting for a person, found
-- without reading every attempt.
CREATE INDEX attempts_awaiting ON attempts (id) WHERE awaiting;
